/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy pub: publishes one event (or --repeat N copies, each with a fresh id). */
#include "cli.h"

static const char help[] =
    "usage: eddy pub SUBJECT [--type TYPE] [--source SOURCE] [--id ID]\n"
    "                [--data JSON | --data-file PATH [--content-type TYPE]] [--repeat N]\n"
    "\n"
    "Publishes a CloudEvent to SUBJECT and prints its stream entry id.\n"
    "  --type TYPE          the event's type (default: the subject)\n"
    "  --source SOURCE      its source (default eddy-cli)\n"
    "  --id ID              its id (default a random UUID; with --repeat, only the first)\n"
    "  --data JSON          data given as JSON, sent as msgpack (application/msgpack)\n"
    "  --data-file PATH     data: the file's bytes as they are (- for stdin)\n"
    "  --content-type TYPE  the data's content type with --data-file\n"
    "                       (default application/octet-stream)\n"
    "  --repeat N           publish N events (fresh ids), default 1\n"
    "With --json: {\"subject\", \"entry_id\", \"id\"} per event.\n";

int cmd_pub(cli *c, int argc, char **argv) {
    cli_event_opts eo = {0};
    long long repeat = 1;
    cli_opt opts[] = {CLI_EVENT_OPTS(eo), {"repeat", 'n', &repeat}, {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos != 1)
        return cli_usage(c, "which subject? (eddy pub SUBJECT ...)");
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot open the bus", st, &err);
    cli_connected(false);
    rc = CLI_OK;
    for (long long i = 0; i < repeat && rc == CLI_OK; i++) {
        eddy_event *ev;
        cli_event_opts one = eo;
        if (i > 0)
            one.id = NULL;
        if ((rc = cli_build_event(c, &one, pos[0], &ev)) >= 0)
            break;
        char entry[64];
        rc = CLI_OK;
        if ((st = eddy_bus_publish(bus, pos[0], ev, entry, sizeof(entry), &err)) != EDDY_OK)
            rc = cli_fail(c, "publish", st, &err);
        else if (c->json)
            cli_print_line(json_pack("{s:s,s:s,s:s}", "subject", pos[0], "entry_id", entry, "id",
                                     eddy_event_id(ev)));
        else
            printf("%s\n", entry);
        eddy_event_free(ev);
    }
    eddy_bus_free(bus);
    return rc;
}

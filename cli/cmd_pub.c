/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy pub: publishes one event (or --repeat N copies, each with a fresh id), or the events of a
 * file in the CloudEvents JSON format (--event-file: one event, or a batch). */
#include "cli.h"

static const char help[] =
    "usage: eddy pub SUBJECT [--type TYPE] [--source SOURCE] [--id ID]\n"
    "                [--data JSON | --data-file PATH [--content-type TYPE]] [--repeat N]\n"
    "       eddy pub SUBJECT --event-file PATH\n"
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
    "  --event-file PATH    publish the CloudEvent PATH holds in the CloudEvents JSON format\n"
    "                       (- for stdin), or each event of a JSON batch (an array), as they\n"
    "                       are (their own ids); not with the options above\n"
    "With --json: {\"subject\", \"entry_id\", \"id\"} per event.\n";

/* --event-file: the events of a JSON document, published in order; stops at the first refusal. */
static int pub_json_events(cli *c, const char *path, const char *subject) {
    char *text;
    size_t len;
    if (!cli_read_file(path, &text, &len)) {
        fprintf(stderr, "eddy %s: cannot read --event-file '%s'\n", c->command, path);
        return CLI_USAGE;
    }
    eddy_event **evs;
    size_t n;
    char why[300];
    bool ok = cli_read_events(text, len, &evs, &n, why, sizeof(why));
    free(text);
    if (!ok)
        return cli_usage(c, "--event-file '%s': %s", path, why);
    eddy_settings s;
    cli_settings(c, &s);
    eddy_error err = {0};
    eddy_bus *bus = NULL;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    bool opened = st == EDDY_OK;
    int rc = opened ? CLI_OK : cli_fail(c, "cannot open the bus", st, &err);
    for (size_t i = 0; i < n && rc == CLI_OK; i++) {
        char entry[64];
        if ((st = eddy_bus_publish(bus, subject, evs[i], entry, sizeof(entry), &err)) != EDDY_OK)
            rc = cli_fail(c, "publish", st, &err);
        else if (c->json)
            cli_print_line(json_pack("{s:s,s:s,s:s}", "subject", subject, "entry_id", entry, "id",
                                     eddy_event_id(evs[i])));
        else
            printf("%s\n", entry);
    }
    for (size_t i = 0; i < n; i++)
        eddy_event_free(evs[i]);
    free(evs);
    if (opened)
        eddy_bus_free(bus);
    return rc;
}

int cmd_pub(cli *c, int argc, char **argv) {
    cli_event_opts eo = {0};
    long long repeat = 1;
    const char *event_file = NULL;
    cli_opt opts[] = {CLI_EVENT_OPTS(eo),
                      {"repeat", 'n', &repeat},
                      {"event-file", 's', &event_file},
                      {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos != 1)
        return cli_usage(c, "which subject? (eddy pub SUBJECT ...)");
    if (event_file && (eo.type || eo.source || eo.id || eo.data || eo.data_file ||
                       eo.content_type || repeat != 1))
        return cli_usage(c, "--event-file brings whole events: no other event option with it");
    if (event_file)
        return pub_json_events(c, event_file, pos[0]);
    eddy_settings s;
    cli_settings(c, &s);
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    if (st != EDDY_OK)
        return cli_fail(c, "cannot open the bus", st, &err);
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

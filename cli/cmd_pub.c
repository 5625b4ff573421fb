/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy pub: publishes one event (or --repeat N copies, each with a fresh id), one event per
 * line of stdin, or the events of a file in the CloudEvents JSON format (--event-file: one event,
 * or a batch). */
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: eddy pub SUBJECT [--type TYPE] [--source SOURCE] [--id ID] [--time TIME]\n"
    "                [--ext NAME=VALUE]... [--data JSON | --data-file PATH [--content-type TYPE]]\n"
    "                [--repeat N]\n"
    "       eddy pub SUBJECT - [--content-type TYPE] [the same options]   (or --stdin)\n"
    "       eddy pub SUBJECT --event-file PATH\n"
    "\n"
    "Publishes a CloudEvent to SUBJECT and prints its stream entry id; with - (or --stdin), one\n"
    "event per line of stdin, each line its data, until the end of the input.\n"
    "  --type TYPE          the event's type (default: the subject)\n"
    "  --source SOURCE      its source (default eddy-cli)\n"
    "  --id ID              its id (default a random UUID; with --repeat or stdin, only the "
    "first)\n"
    "  --time TIME          its time: an RFC 3339 timestamp, or now\n"
    "  --ext NAME=VALUE     an extension attribute (repeatable)\n"
    "  --data JSON          data given as JSON, sent as msgpack (application/msgpack)\n"
    "  --data-file PATH     data: the file's bytes as they are (- for stdin)\n"
    "  --content-type TYPE  the data's content type with --data-file (default\n"
    "                       application/octet-stream); with stdin lines, send each line's bytes\n"
    "                       as they are with this type instead of reading it as JSON\n"
    "  --stdin              one event per line of stdin (as SUBJECT -): each line is JSON, sent\n"
    "                       as msgpack, unless --content-type is given; empty lines are skipped\n"
    "  --repeat N           publish N events (fresh ids), default 1\n"
    "  --event-file PATH    publish the CloudEvent PATH holds in the CloudEvents JSON format\n"
    "                       (- for stdin), or each event of a JSON batch (an array), as they\n"
    "                       are (their own ids); not with the options above\n"
    "With --json: {\"subject\", \"entry_id\", \"id\"} per event. A line that is not JSON stops\n"
    "with exit 2, naming it; the lines before it are published.\n";

/* Publishes one event; -1, or an exit code after printing why not. */
static int publish_one(cli *c, eddy_bus *bus, const char *subject, const cli_event_opts *o) {
    eddy_event *ev;
    int rc = cli_build_event(c, o, subject, &ev);
    if (rc >= 0)
        return rc;
    char entry[64];
    eddy_error err = {0};
    eddy_status st = eddy_bus_publish(bus, subject, ev, entry, sizeof(entry), &err);
    if (st != EDDY_OK)
        rc = cli_fail(c, "publish", st, &err);
    else if (c->json)
        cli_print_line(json_pack("{s:s,s:s,s:s}", "subject", subject, "entry_id", entry, "id",
                                 eddy_event_id(ev)));
    else
        printf("%s\n", entry);
    eddy_event_free(ev);
    return rc;
}

/* One event per line of stdin. */
static int publish_lines(cli *c, eddy_bus *bus, const char *subject, const cli_event_opts *eo) {
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = -1;
    long long number = 0, sent = 0;
    while (rc < 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        number++;
        size_t len = (size_t)n;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if (len > 0 && line[len - 1] == '\r')
            line[--len] = '\0';
        if (len == 0)
            continue;
        cli_event_opts one = *eo;
        if (sent > 0)
            one.id = NULL;
        one.line = line;
        one.line_len = len;
        if ((rc = publish_one(c, bus, subject, &one)) >= 0)
            fprintf(stderr, "eddy pub: stopped at line %lld of stdin\n", number);
        else
            sent++;
    }
    free(line);
    if (rc < 0 && ferror(stdin)) {
        fprintf(stderr, "eddy pub: cannot read stdin\n");
        rc = CLI_FAILED;
    }
    return rc < 0 ? CLI_OK : rc;
}

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
    int rc = cli_settings(c, &s);
    if (rc >= 0) {
        for (size_t i = 0; i < n; i++)
            eddy_event_free(evs[i]);
        free(evs);
        return rc;
    }
    eddy_error err = {0};
    eddy_bus *bus = NULL;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    bool opened = st == EDDY_OK;
    rc = opened ? CLI_OK : cli_fail(c, "cannot open the bus", st, &err);
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
    bool from_stdin = false;
    const char *event_file = NULL;
    cli_opt opts[] = {CLI_EVENT_OPTS(eo),
                      {"repeat", 'n', &repeat},
                      {"stdin", 'f', &from_stdin},
                      {"event-file", 's', &event_file},
                      {NULL, 0, NULL}};
    char *pos[2];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos == 0)
        return cli_usage(c, "which subject? (eddy pub SUBJECT ...)");
    if (npos == 2 && strcmp(pos[1], "-") != 0)
        return cli_usage(c, "unexpected argument '%s' (- reads events from stdin)", pos[1]);
    from_stdin |= npos == 2;
    if (event_file && (from_stdin || eo.type || eo.source || eo.id || eo.time || eo.ext.n ||
                       eo.data || eo.data_file || eo.content_type || repeat != 1))
        return cli_usage(c, "--event-file brings whole events: no other event option with it");
    if (event_file)
        return pub_json_events(c, event_file, pos[0]);
    if (from_stdin && (eo.data || eo.data_file || repeat != 1))
        return cli_usage(c, "stdin lines are the data: no --data, --data-file or --repeat");
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot open the bus", st, &err);
    cli_connected(false);
    if (from_stdin) {
        rc = publish_lines(c, bus, pos[0], &eo);
    } else {
        rc = -1;
        for (long long i = 0; i < repeat && rc < 0; i++) {
            cli_event_opts one = eo;
            if (i > 0)
                one.id = NULL;
            rc = publish_one(c, bus, pos[0], &one);
        }
        rc = rc < 0 ? CLI_OK : rc;
    }
    eddy_bus_free(bus);
    return rc;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy store: the event store (eddy/store.h). read and tail print stored events as JSON lines
 * {"stream_id", "version", "position", "event"}; a read across the store shows a progress bar on
 * a terminal (it knows the head position it reads up to). tail polls: the store has no blocking
 * read, and an operator's tail can wait a fraction of a second. */
#include <string.h>
#include <time.h>

#include "cli.h"

static const char help[] =
    "usage: eddy store read [STREAM] [--after N] [--max N]\n"
    "       eddy store tail [STREAM] [--count N] [--timeout MS]\n"
    "       eddy store append STREAM [--expect-version N | --no-stream] [--publish SUBJECT]\n"
    "                        [--type TYPE] [--data JSON | --data-file PATH ...]\n"
    "\n"
    "  read    prints stored events as JSON lines {\"stream_id\", \"version\", \"position\",\n"
    "          \"event\", \"data_value\"} (as eddy tail): one stream's in version order (after\n"
    "          version --after), or, without STREAM, the whole store in position order (after\n"
    "          position --after); at most --max\n"
    "  tail    prints events stored from now on (one stream's, or all), until Ctrl-C, --count N\n"
    "          events or --timeout MS (exit 5 when --count was not reached)\n"
    "  append  appends one event to STREAM (the event options as for eddy pub; the type\n"
    "          defaults to the stream's name) and prints the stream's new version;\n"
    "          --expect-version N fails unless the stream is at version N, --no-stream unless it\n"
    "          has no event yet; --publish SUBJECT also publishes it there, atomically; the event\n"
    "          options are eddy pub's (--type, --source, --id, --time, --ext, --data ...)\n"
    "With --raw, read and tail print only each event's data, one per line.\n";

typedef struct printer {
    long long max, printed;
    long long last; /* the last version (one stream) or position (all) printed */
    bool by_version;
    bool raw;          /* --raw: the data only */
    bool quiet;        /* only learn where the end is */
    bool write_failed; /* stdout is gone or full: the read stopped */
    cli_progress *bar;
} printer;

static eddy_status print_stored(const eddy_event *ev, const eddy_event_meta *meta, void *user) {
    printer *p = user;
    if (p->max > 0 && p->printed >= p->max)
        return EDDY_ERR_CANCELLED; /* enough */
    if (!p->quiet && p->raw && !cli_print_raw(ev)) {
        p->write_failed = true;
        return EDDY_ERR_CANCELLED;
    }
    if (!p->quiet && !p->raw &&
        !cli_print_line(json_pack("{s:s,s:I,s:I,s:o*,s:o*}", "stream_id", meta->stream_id,
                                  "version", (json_int_t)meta->version, "position",
                                  (json_int_t)meta->position, "event", cli_event_json(ev),
                                  "data_value", cli_data_value(ev)))) {
        p->write_failed = true;
        return EDDY_ERR_CANCELLED; /* stops the read: what is not shown is not skipped */
    }
    p->printed++;
    p->last = p->by_version ? meta->version : meta->position;
    return EDDY_OK;
}

/* Reads from p->last on: one stream, or the store up to its head (pages of 256). */
static eddy_status read_on(eddy_store *store, const char *stream, printer *p, eddy_error *err) {
    if (stream)
        return eddy_store_read_stream(store, stream, p->last, print_stored, p, err);
    long long head, next = p->last;
    eddy_status st = eddy_store_head(store, &head, err);
    if (st == EDDY_OK && p->bar)
        cli_progress_start(p->bar, "reading", head > next ? (unsigned long long)(head - next) : 0);
    long long from = next;
    while (st == EDDY_OK && next < head) {
        st = eddy_store_read_page(store, next, 256, NULL, print_stored, p, &next, err);
        p->last = next;
        if (p->bar)
            cli_progress_update(p->bar, (unsigned long long)(next - from));
    }
    if (p->bar)
        cli_progress_end(p->bar);
    return st;
}

static int do_read(cli *c, eddy_store *store, const char *stream, long long after, long long max) {
    cli_progress bar;
    printer p = {
        .max = max, .last = after, .by_version = stream != NULL, .raw = c->raw, .bar = &bar};
    eddy_error err = {0};
    eddy_status st = read_on(store, stream, &p, &err);
    if (p.write_failed) {
        fprintf(stderr, "eddy store: cannot write to stdout; stopped\n");
        return CLI_FAILED;
    }
    if (st == EDDY_ERR_CANCELLED)
        st = EDDY_OK;
    return st == EDDY_OK ? CLI_OK : cli_fail(c, "read", st, &err);
}

static int do_tail(cli *c, eddy_store *store, const char *stream, long long count,
                   long long timeout) {
    cli_block_signals();
    printer p = {.max = count, .by_version = stream != NULL, .raw = c->raw};
    eddy_error err = {0};
    eddy_status st = EDDY_OK;
    /* From now on: the stream's version, or the store's head. */
    if (stream) { /* no call gives a stream's version: its history is read, unshown */
        printer skip = {.by_version = true, .quiet = true};
        st = eddy_store_read_stream(store, stream, 0, print_stored, &skip, &err);
        p.last = skip.last;
    } else {
        st = eddy_store_head(store, &p.last, &err);
    }
    long long waited = 0;
    const long long poll_ms = 200;
    while (st == EDDY_OK && (count == 0 || p.printed < count)) {
        st = read_on(store, stream, &p, &err);
        if (st != EDDY_OK || (count > 0 && p.printed >= count))
            break;
        if (timeout > 0 && waited >= timeout)
            break;
        if (cli_wait(poll_ms) == 0)
            return CLI_OK; /* Ctrl-C */
        waited += poll_ms;
    }
    if (p.write_failed) {
        fprintf(stderr, "eddy store: cannot write to stdout; stopped\n");
        return CLI_FAILED;
    }
    if (st == EDDY_ERR_CANCELLED)
        st = EDDY_OK;
    if (st != EDDY_OK)
        return cli_fail(c, "tail", st, &err);
    if (count > 0 && p.printed < count) {
        fprintf(stderr, "eddy store: %lld of %lld events before the timeout\n", p.printed, count);
        return CLI_NO_REPLY;
    }
    return CLI_OK;
}

static int do_append(cli *c, eddy_store *store, const char *stream, const cli_event_opts *eo,
                     long long expect, bool no_stream, const char *publish) {
    eddy_event *ev;
    int rc = cli_build_event(c, eo, stream, &ev);
    if (rc >= 0)
        return rc;
    eddy_append_opts ao;
    eddy_append_opts_init(&ao);
    if (expect >= 0)
        ao.expected_version = expect;
    if (no_stream)
        ao.expected_version = EDDY_NO_STREAM;
    ao.publish_subject = publish;
    long long version;
    eddy_error err = {0};
    const eddy_event *evs[1] = {ev};
    eddy_status st = eddy_store_append(store, stream, evs, 1, &ao, &version, &err);
    if (st == EDDY_OK) {
        if (c->json)
            cli_print_line(json_pack("{s:s,s:I,s:s}", "stream_id", stream, "version",
                                     (json_int_t)version, "id", eddy_event_id(ev)));
        else
            printf("%lld\n", version);
    }
    eddy_event_free(ev);
    return st == EDDY_OK ? CLI_OK : cli_fail(c, "append", st, &err);
}

int cmd_store(cli *c, int argc, char **argv) {
    cli_event_opts eo = {0};
    long long after = 0, max = 0, count = 0, timeout = 0, expect = -1;
    bool no_stream = false;
    const char *publish = NULL;
    cli_opt opts[] = {CLI_EVENT_OPTS(eo),
                      {"after", 'n', &after},
                      {"max", 'n', &max},
                      {"count", 'n', &count},
                      {"timeout", 'n', &timeout},
                      {"expect-version", 'n', &expect},
                      {"no-stream", 'f', &no_stream},
                      {"publish", 's', &publish},
                      {NULL, 0, NULL}};
    char *pos[2];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 2, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos == 0)
        return cli_usage(c, "read, tail or append? (see --help)");
    const char *verb = pos[0], *stream = npos > 1 ? pos[1] : NULL;
    bool is_append = strcmp(verb, "append") == 0;
    if (!is_append && strcmp(verb, "read") != 0 && strcmp(verb, "tail") != 0)
        return cli_usage(c, "unknown store command '%s' (read, tail, append)", verb);
    if (is_append && !stream)
        return cli_usage(c, "usage: eddy store append STREAM ...");
    if (is_append && expect >= 0 && no_stream)
        return cli_usage(c, "give --expect-version or --no-stream, not both");
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_error err = {0};
    eddy_store *store;
    eddy_status st = eddy_store_open(&s, &store, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot open the store", st, &err);
    cli_connected(strcmp(verb, "tail") == 0);
    if (is_append)
        rc = do_append(c, store, stream, &eo, expect, no_stream, publish);
    else if (strcmp(verb, "read") == 0)
        rc = do_read(c, store, stream, after, max);
    else
        rc = do_tail(c, store, stream, count, timeout);
    eddy_store_close(store);
    return rc;
}

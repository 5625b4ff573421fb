/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy tail: a subscription that prints what it receives as JSON lines. Fan-out by default (it
 * sees every event published after it started, and takes nothing from anyone); with --group it
 * joins a competing group, AtLeastOnce: an event is acknowledged once printed. With --count N it
 * stops after N; deliveries beyond N are handed back (--group) so the group loses nothing. */
#include <pthread.h>
#include <string.h>

#include "cli.h"

static const char help[] =
    "usage: eddy tail PATTERN [--group GROUP] [--count N] [--timeout MS]\n"
    "\n"
    "Prints each event published to a subject PATTERN matches (\"orders.created\", \"orders.*\",\n"
    "\"orders.>\") as one JSON line: {\"subject\", \"entry_id\", \"attempt\", \"event\": the\n"
    "CloudEvent in the CloudEvents JSON format (binary data as data_base64), \"data_value\":\n"
    "msgpack data decoded to JSON}.\n"
    "  --group GROUP  join the competing group GROUP (acknowledging what is printed) instead\n"
    "                 of a fan-out of its own, which sees only what is published after it starts\n"
    "  --count N      stop after N events\n"
    "  --timeout MS   stop after MS milliseconds (exit 5 when --count was not reached)\n"
    "Stops on Ctrl-C (exit 0).\n";

typedef struct tail_state {
    pthread_mutex_t lock;
    long long count, printed; /* count 0: no limit */
    bool failed;              /* an event could not be written out */
} tail_state;

static eddy_status on_event(eddy_delivery *d, void *user) {
    tail_state *t = user;
    pthread_mutex_lock(&t->lock);
    if (t->failed || (t->count > 0 && t->printed >= t->count)) {
        pthread_mutex_unlock(&t->lock);
        return EDDY_ERR_UNAVAILABLE; /* not ours to take: handed back to the group */
    }
    json_t *line =
        json_pack("{s:s,s:s,s:i,s:o*,s:o*}", "subject", eddy_delivery_subject(d), "entry_id",
                  eddy_delivery_entry_id(d), "attempt", (int)eddy_delivery_attempt(d), "event",
                  cli_event_json(eddy_delivery_event(d)), "data_value",
                  cli_data_value(eddy_delivery_event(d)));
    if (!cli_print_line(line)) { /* stdout is gone or full: keep the event, stop */
        t->failed = true;
        cli_wait_done();
        pthread_mutex_unlock(&t->lock);
        return EDDY_ERR_UNAVAILABLE;
    }
    if (++t->printed == t->count)
        cli_wait_done();
    pthread_mutex_unlock(&t->lock);
    return EDDY_OK;
}

int cmd_tail(cli *c, int argc, char **argv) {
    const char *group = NULL;
    long long count = 0, timeout = 0;
    cli_opt opts[] = {{"group", 's', &group},
                      {"count", 'n', &count},
                      {"timeout", 'n', &timeout},
                      {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos != 1)
        return cli_usage(c, "which pattern? (eddy tail PATTERN ...)");
    cli_block_signals();
    tail_state t = {.count = count};
    pthread_mutex_init(&t.lock, NULL);
    eddy_settings s;
    cli_settings(c, &s);
    s.workers = 1; /* printed in the order read */
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "eddy-tail";
    spec.pattern = pos[0];
    spec.handler = on_event;
    spec.user = &t;
    if (group) {
        spec.shape = EDDY_COMPETING;
        spec.group = group;
        spec.delivery = EDDY_AT_LEAST_ONCE;
    } else {
        spec.shape = EDDY_FANOUT;
    }
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, &spec, 1, &bus, &err);
    if (st != EDDY_OK)
        return cli_fail(c, "cannot subscribe", st, &err);
    if ((st = eddy_bus_start(bus, &err)) != EDDY_OK) {
        eddy_bus_free(bus);
        return cli_fail(c, "cannot start", st, &err);
    }
    int waited = cli_wait(timeout);
    eddy_bus_free(bus); /* stops: a handler running now finishes first */
    pthread_mutex_destroy(&t.lock);
    if (t.failed) {
        fprintf(stderr, "eddy tail: cannot write to stdout; stopped (the event is handed back)\n");
        return CLI_FAILED;
    }
    if (waited < 0 && count > 0 && t.printed < count) {
        fprintf(stderr, "eddy tail: %lld of %lld events before the timeout\n", t.printed, count);
        return CLI_NO_REPLY;
    }
    return CLI_OK;
}

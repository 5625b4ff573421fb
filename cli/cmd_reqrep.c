/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy request and eddy respond: the two ends of request/reply. request prints the reply (as
 * tail prints an event) or why there is none; respond answers with the request's own data (echo)
 * or a fixed reply, for testing a requester. */
#include <pthread.h>
#include <string.h>

#include "cli.h"

static const char request_help[] =
    "usage: eddy request SUBJECT [--timeout MS] [--type TYPE] [--source SOURCE] [--id ID]\n"
    "                    [--data JSON | --data-file PATH [--content-type TYPE]]\n"
    "                    [--all [--max N] [--stop-on-failure]]\n"
    "\n"
    "Sends a request and prints the reply as one JSON line: {\"subject\", \"event\": {...}};\n"
    "with --json, no reply is a line too: {\"subject\", \"status\": \"EDDY_ERR_NO_REPLY\", ...}.\n"
    "  --timeout MS  the deadline (default 5000)\n"
    "  --all         ask every responder that answers scatter-gather requests (eddy respond\n"
    "                --all) and print each reply as a line, a failure reply as {\"subject\",\n"
    "                \"status\": \"EDDY_ERR_RESPONDER_FAILED\"}, until the deadline or:\n"
    "  --max N       N replies came\n"
    "  --stop-on-failure  a failure reply came\n"
    "  (the event options as for eddy pub: --type, --source, --id, --time, --ext, --data ...)\n"
    "With --raw, only the reply's data.\n"
    "Exit 5 when nothing subscribes to SUBJECT (no responders) or no reply came in time; exit 1\n"
    "when the responder failed.\n";

/* A scatter-gather request: each reply a line, then the outcome as for one request. */
static eddy_status request_all(cli *c, eddy_bus *bus, const char *subject, const eddy_event *ev,
                               long long timeout, long long max, bool stop, eddy_error *err) {
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(timeout);
    o.max_replies = (size_t)max;
    o.stop_on_failure = stop;
    eddy_replies *r = NULL;
    eddy_status st = eddy_bus_request_all(bus, subject, ev, &o, &r, err);
    for (size_t i = 0; i < eddy_replies_count(r); i++) {
        const eddy_event *reply = eddy_replies_event(r, i);
        if (reply && c->raw)
            cli_print_raw(reply);
        else if (reply)
            cli_print_line(json_pack("{s:s,s:o*,s:o*}", "subject", subject, "event",
                                     cli_event_json(reply), "data_value", cli_data_value(reply)));
        else
            cli_print_line(json_pack("{s:s,s:s,s:s}", "subject", subject, "status",
                                     eddy_status_name(eddy_replies_result(r, i)), "error",
                                     eddy_status_str(eddy_replies_result(r, i))));
    }
    eddy_replies_free(r);
    return st;
}

int cmd_request(cli *c, int argc, char **argv) {
    cli_event_opts eo = {0};
    long long timeout = 5000, max = 0;
    bool all = false, stop = false;
    cli_opt opts[] = {CLI_EVENT_OPTS(eo), {"timeout", 'n', &timeout},      {"all", 'f', &all},
                      {"max", 'n', &max}, {"stop-on-failure", 'f', &stop}, {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(request_help);
    if (npos != 1)
        return cli_usage(c, "which subject? (eddy request SUBJECT ...)");
    if (timeout == 0)
        return cli_usage(c, "--timeout must be at least 1 millisecond");
    if (!all && (max || stop))
        return cli_usage(c, "--max and --stop-on-failure go with --all");
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_event *ev;
    if ((rc = cli_build_event(c, &eo, pos[0], &ev)) >= 0)
        return rc;
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    if (st == EDDY_OK && (st = eddy_bus_start(bus, &err)) != EDDY_OK)
        eddy_bus_free(bus);
    if (st != EDDY_OK) {
        eddy_event_free(ev);
        return cli_fail_connect(c, "cannot open the bus", st, &err);
    }
    cli_connected(false);
    eddy_request_opts ro = {.deadline_ms = eddy_deadline_in(timeout)};
    eddy_event *reply = NULL;
    if (all)
        st = request_all(c, bus, pos[0], ev, timeout, max, stop, &err);
    else
        st = eddy_bus_request(bus, pos[0], ev, &ro, &reply, &err);
    if (st == EDDY_OK && all)
        ; /* its replies are printed */
    else if (st == EDDY_OK && c->raw)
        cli_print_raw(reply);
    else if (st == EDDY_OK)
        cli_print_line(json_pack("{s:s,s:o*,s:o*}", "subject", pos[0], "event",
                                 cli_event_json(reply), "data_value", cli_data_value(reply)));
    else if (c->json) /* scripts read the outcome where they read a reply */
        cli_print_line(json_pack("{s:s,s:s,s:s}", "subject", pos[0], "status", eddy_status_name(st),
                                 "error", eddy_status_str(st)));
    if (st != EDDY_OK)
        rc = cli_fail(c, "request", st, &err);
    eddy_event_free(reply);
    eddy_event_free(ev);
    eddy_bus_free(bus);
    return st == EDDY_OK ? CLI_OK : rc;
}

/* ---- respond ------------------------------------------------------------------------------ */

static const char respond_help[] =
    "usage: eddy respond PATTERN [--group GROUP] [--reply JSON] [--type TYPE] [--count N]\n"
    "                    [--timeout MS] [--all]\n"
    "\n"
    "Answers requests to subjects PATTERN matches, until Ctrl-C: with each request's own data\n"
    "and content type (echo), or with --reply's JSON as msgpack data. Prints each request it\n"
    "answers as a JSON line, as tail does.\n"
    "  --group GROUP  the responders' group (default eddy-respond)\n"
    "  --reply JSON   a fixed reply's data instead of the echo\n"
    "  --type TYPE    the reply's type (default: the request's type with \".reply\" appended)\n"
    "  --count N      stop after N requests\n"
    "  --timeout MS   stop after MS milliseconds (exit 5 when --count was not reached)\n"
    "  --all          also answer scatter-gather requests (eddy request --all): each reaches\n"
    "                 every responder that answers them, this one too\n";

typedef struct responder {
    pthread_mutex_t lock;
    const char *type;
    char *reply_data; /* msgpack of --reply, or NULL: echo */
    size_t reply_len;
    long long count, answered;
} responder;

static eddy_status answer(eddy_delivery *d, eddy_event **reply, void *user) {
    responder *r = user;
    pthread_mutex_lock(&r->lock);
    if (r->count > 0 && r->answered >= r->count) {
        pthread_mutex_unlock(&r->lock);
        return EDDY_ERR_UNAVAILABLE; /* past --count: a failure reply, not an answer */
    }
    const eddy_event *req = eddy_delivery_event(d);
    eddy_event *ev = eddy_event_new();
    char id[37], type[256];
    cli_random_id(id);
    snprintf(type, sizeof(type), "%s.reply", eddy_event_type(req));
    size_t len;
    const void *data = r->reply_data ? r->reply_data : eddy_event_data(req, &len);
    const char *ct = r->reply_data ? "application/msgpack" : eddy_event_datacontenttype(req);
    if (r->reply_data)
        len = r->reply_len;
    eddy_status st = ev ? eddy_event_set_id(ev, id) : EDDY_ERR_NOMEM;
    if (st == EDDY_OK)
        st = eddy_event_set_source(ev, "eddy-cli");
    if (st == EDDY_OK)
        st = eddy_event_set_type(ev, r->type ? r->type : type);
    if (st == EDDY_OK && ct)
        st = eddy_event_set_datacontenttype(ev, ct);
    if (st == EDDY_OK && data)
        st = eddy_event_set_data(ev, data, len);
    if (st == EDDY_OK) {
        (void)cli_print_line(json_pack("{s:s,s:s,s:o*,s:o*}", "subject", eddy_delivery_subject(d),
                                       "entry_id", eddy_delivery_entry_id(d), "event",
                                       cli_event_json(req), "data_value", cli_data_value(req)));
        *reply = ev;
        if (++r->answered == r->count)
            cli_wait_done();
    } else {
        eddy_event_free(ev);
    }
    pthread_mutex_unlock(&r->lock);
    return st;
}

int cmd_respond(cli *c, int argc, char **argv) {
    const char *group = "eddy-respond", *reply = NULL, *type = NULL;
    long long count = 0, timeout = 0;
    bool all = false;
    cli_opt opts[] = {{"group", 's', &group}, {"reply", 's', &reply},     {"type", 's', &type},
                      {"count", 'n', &count}, {"timeout", 'n', &timeout}, {"all", 'f', &all},
                      {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(respond_help);
    if (npos != 1)
        return cli_usage(c, "which pattern? (eddy respond PATTERN ...)");
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    responder r = {.type = type, .count = count};
    char why[200];
    if (reply && !cli_json_to_msgpack(reply, &r.reply_data, &r.reply_len, why, sizeof(why)))
        return cli_usage(c, "--reply is not JSON: %s", why);
    cli_block_signals();
    pthread_mutex_init(&r.lock, NULL);
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "eddy-respond";
    spec.pattern = pos[0];
    spec.group = group;
    spec.responder = answer;
    spec.user = &r;
    eddy_error err = {0};
    eddy_bus *bus;
    eddy_status st = eddy_bus_new(&s, &spec, 1, &bus, &err);
    if (st == EDDY_OK && all && (st = eddy_bus_answer_all(bus, spec.name, &err)) != EDDY_OK)
        eddy_bus_free(bus);
    if (st == EDDY_OK && (st = eddy_bus_start(bus, &err)) != EDDY_OK)
        eddy_bus_free(bus);
    if (st != EDDY_OK) {
        free(r.reply_data);
        pthread_mutex_destroy(&r.lock);
        return cli_fail_connect(c, "cannot start the responder", st, &err);
    }
    cli_connected(true);
    int waited = cli_wait(timeout);
    eddy_bus_free(bus);
    free(r.reply_data);
    pthread_mutex_destroy(&r.lock);
    if (waited < 0 && count > 0 && r.answered < count) {
        fprintf(stderr, "eddy respond: %lld of %lld requests before the timeout\n", r.answered,
                count);
        return CLI_NO_REPLY;
    }
    return CLI_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Scatter-gather requests in the core (src/bus/gather.h, the table in requests.c, request_flow's
 * gather mode) with no server and no front end: the registry question asks for gather twins
 * only, the entry goes to the gather stream, replies fed as entries are gathered, and each way
 * a gather ends gives its outcome and its one counter. */
#include <criterion/criterion.h>
#include <string.h>

#include "bus/request_flow.h"
#include "events/entry.h"
#include "raw.h"

typedef struct fixture {
    eddy__settings s;
    eddy__requests *requests;
    eddy__registry_cache *cache;
    eddy__publisher *publisher;
    eddy__request_ctx ctx;
    eddy_event *ev;
    int waiter;
} fixture;

static void fixture_init(fixture *f) {
    memset(f, 0, sizeof(*f));
    eddy_settings us;
    eddy_settings_init(&us);
    us.url = "memory://gather";
    us.ns = "gather";
    us.source = "/tests/gather";
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&f->s, &us, &err), EDDY_OK);
    f->requests = eddy__requests_new(&f->s);
    f->cache = eddy__registry_cache_new(EDDY__REGISTRY_CACHE_MS);
    f->publisher = eddy__publisher_new(&f->s);
    cr_assert(f->requests && f->cache && f->publisher);
    f->ctx = (eddy__request_ctx){
        f->requests, f->cache, f->publisher,      "gather", EDDY_CAP_REQUEST_REPLY,
        true,        false,    "{gather}:inbox:x"};
    f->ev = eddy_event_new();
    eddy_event_set_id(f->ev, "q1");
    eddy_event_set_source(f->ev, "/tests/gather");
    eddy_event_set_type(f->ev, "t.ask");
}

static void fixture_free(fixture *f) {
    eddy_event_free(f->ev);
    eddy__publisher_free(f->publisher);
    eddy__registry_cache_free(f->cache);
    eddy__requests_free(f->requests);
    eddy__settings_free(&f->s);
}

static eddy_request_stats stats(fixture *f) {
    eddy_request_stats s;
    eddy__requests_stats(f->requests, NULL, &s);
    return s;
}

static void begin(fixture *f, eddy__request_flow *fl, size_t max, bool stop, bool each) {
    eddy_gather_opts o;
    eddy_gather_opts_init(&o);
    o.deadline_ms = eddy_deadline_in(10000);
    o.max_replies = max;
    o.stop_on_failure = stop;
    eddy_error err;
    eddy_status st = eddy__request_flow_begin_gather(fl, &f->ctx, &o, each, "tables.setup", f->ev,
                                                     &f->waiter, eddy_now_ms(), &err);
    cr_assert_eq(st, EDDY_OK, "begin: %s", err.detail);
    cr_assert(fl->is_gather);
}

/* The registry's answer: one member of kind `kind` on pattern. */
static eddy__req_step answer_registry(eddy__request_flow *fl, char kind, const char *pattern) {
    char text[256];
    snprintf(text, sizeof(text), "*1\r\n$%zu\r\n%c\tg\ti\tn\t%s\r\n", 8 + strlen(pattern), kind,
             pattern);
    redisReply *replies[EDDY__REQUEST_MAX_CMDS] = {raw_parse(text), NULL};
    return eddy__request_flow_feed(fl, EDDY_OK, replies, NULL);
}

static eddy__req_step answer_entry(eddy__request_flow *fl) {
    const eddy__cmdlist *cmds = eddy__request_flow_cmds(fl);
    redisReply *replies[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = strcmp(cmds->cmds[i].argv[0], "XADD") == 0 ? raw_parse("$3\r\n1-1\r\n")
                                                                : raw_parse(":1\r\n");
    eddy__req_step step = eddy__request_flow_feed(fl, EDDY_OK, replies, NULL);
    for (size_t i = 0; i < cmds->n; i++)
        freeReplyObject(replies[i]);
    return step;
}

/* A gather sent and waiting. */
static void sent(fixture *f, eddy__request_flow *fl, size_t max, bool stop, bool each) {
    begin(f, fl, max, stop, each);
    if (fl->step == EDDY__REQ_ASK)
        cr_assert_eq(answer_registry(fl, 'g', "tables.*"), EDDY__REQ_SEND);
    cr_assert_eq(answer_entry(fl), EDDY__REQ_WAIT);
}

/* One reply entry to request id, as the reply stream holds it; failed: a failure reply. */
static bool reply(fixture *f, const char *id, bool failed, eddy__reply_done *out) {
    eddy_event *r = eddy_event_new();
    eddy_event_set_id(r, "r1");
    eddy_event_set_source(r, "/tests/responder");
    eddy_event_set_type(r, "t.reply");
    if (failed)
        eddy_event_set_extension(r, "messagingfailed", "true", NULL);
    eddy__cmd cmd;
    eddy__cmd_init(&cmd);
    cr_assert_eq(eddy__entry_encode(r, &cmd), EDDY_OK);
    eddy__cmd_str(&cmd, "_request");
    eddy__cmd_str(&cmd, id);
    memset(out, 0, sizeof(*out));
    bool matched = eddy__requests_match(f->requests, (const char *const *)cmd.argv, cmd.argvlen,
                                        (size_t)cmd.argc, out);
    eddy__cmd_reset(&cmd);
    eddy_event_free(r);
    return matched;
}

Test(gather_core, asks_for_gather_twins_and_sends_to_the_gather_stream) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl, 0, false, false);
    cr_assert_eq(fl.step, EDDY__REQ_ASK);
    /* A plain responder matches, but it does not answer gathers: no responders, at once. */
    cr_assert_eq(answer_registry(&fl, 'r', "tables.*"), EDDY__REQ_END);
    cr_expect_eq(fl.st, EDDY_ERR_NO_RESPONDERS);
    cr_expect_eq(eddy__requests_in_flight(f.requests), 0);
    eddy_request_stats s = stats(&f);
    cr_expect(s.sent == 1 && s.no_responders == 1, "counted as a single request is");
    eddy__request_flow_reset(&fl);

    begin(&f, &fl, 0, false, false);
    cr_assert_eq(answer_registry(&fl, 'g', "tables.*"), EDDY__REQ_SEND);
    const eddy__cmdlist *cmds = eddy__request_flow_cmds(&fl);
    const eddy__cmd *x = &cmds->cmds[cmds->n - 1];
    cr_assert_str_eq(x->argv[0], "XADD");
    cr_expect_str_eq(x->argv[1], "{gather}:all:tables.setup");
    cr_expect_str_eq(x->argv[2], "MAXLEN");
    cr_expect_str_eq(x->argv[3], "~");
    cr_assert_eq(answer_entry(&fl), EDDY__REQ_WAIT);
    cr_expect_eq(stats(&f).sent, 2);
    /* A single request to the same subject still asks about any subscription (remembered: a
     * positive answer for the twin's pattern), and goes to the subject stream. */
    eddy__request_flow one;
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    eddy_error err;
    cr_assert_eq(eddy__request_flow_begin(&one, &f.ctx, &o, "tables.setup", f.ev, &f.waiter,
                                          eddy_now_ms(), &err),
                 EDDY_OK);
    cr_assert_eq(one.step, EDDY__REQ_SEND);
    cmds = eddy__request_flow_cmds(&one);
    cr_expect_str_eq(cmds->cmds[cmds->n - 1].argv[1], "{gather}:s:tables.setup");
    cr_assert(eddy__requests_give_up(f.requests, one.out.id));
    eddy__request_flow_reset(&one);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(gather_core, max_replies_ends_it_answered) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    sent(&f, &fl, 2, false, false);
    eddy__reply_done d;
    cr_expect_not(reply(&f, fl.out.id, false, &d), "a front end that waits hears only the end");
    cr_expect_eq(eddy__requests_in_flight(f.requests), 1, "still gathering");
    cr_assert(reply(&f, fl.out.id, true, &d));
    cr_expect(d.gather && !d.more);
    cr_expect_eq(d.waiter, &f.waiter);
    cr_expect_eq(d.st, EDDY_OK, "two came, a failure among them: %s", eddy_status_name(d.st));
    cr_expect_eq(eddy__requests_in_flight(f.requests), 0);
    eddy_replies *r = eddy__gather_take(&fl.gather);
    cr_assert_eq(eddy_replies_count(r), 2);
    cr_expect_eq(eddy_replies_result(r, 0), EDDY_OK);
    cr_expect_str_eq(eddy_event_id(eddy_replies_event(r, 0)), "r1");
    cr_expect_eq(eddy_replies_result(r, 1), EDDY_ERR_RESPONDER_FAILED);
    cr_expect_null(eddy_replies_event(r, 1));
    cr_expect_eq(eddy_replies_failed(r), 1);
    eddy_replies_free(r);
    /* A third: Unclaimed. */
    cr_expect_not(reply(&f, fl.out.id, false, &d));
    eddy_request_stats s = stats(&f);
    cr_expect(s.sent == 1 && s.answered == 1 && s.failed == 0 && s.unclaimed == 1);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(gather_core, each_reply_is_told_and_a_failure_ends_it_when_asked) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    sent(&f, &fl, 0, true, true);
    eddy__reply_done d;
    cr_assert(reply(&f, fl.out.id, false, &d), "told of each");
    cr_expect(d.gather && d.more);
    cr_expect_eq(d.last_st, EDDY_OK);
    cr_assert_not_null(d.reply, "borrowed from the list");
    cr_expect_str_eq(eddy_event_type(d.reply), "t.reply");
    cr_assert(reply(&f, fl.out.id, true, &d));
    cr_expect(!d.more);
    cr_expect_eq(d.last_st, EDDY_ERR_RESPONDER_FAILED);
    cr_expect_null(d.reply);
    cr_expect_eq(d.st, EDDY_ERR_RESPONDER_FAILED);
    eddy_request_stats s = stats(&f);
    cr_expect(s.sent == 1 && s.failed == 1 && s.answered == 0);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(gather_core, the_deadline_and_cancel) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    eddy__reply_done d;
    /* Until the deadline, one reply came: the end asked for, Answered. */
    sent(&f, &fl, 0, false, false);
    reply(&f, fl.out.id, false, &d);
    cr_assert_eq(eddy__requests_pop_expired(f.requests, eddy_now_ms() + 20000), &f.waiter);
    cr_expect(fl.gather.ended);
    cr_expect_eq(fl.gather.outcome, EDDY_OK);
    eddy__request_flow_reset(&fl);
    /* Until the deadline, nothing came: NoReply. */
    sent(&f, &fl, 0, false, false);
    cr_assert(eddy__requests_expire(f.requests, fl.out.id));
    cr_expect_eq(fl.gather.outcome, EDDY_ERR_NO_REPLY);
    eddy__request_flow_reset(&fl);
    /* Three asked for, one came by the deadline: NoReply, with the one. */
    sent(&f, &fl, 3, false, false);
    reply(&f, fl.out.id, false, &d);
    cr_assert(eddy__requests_expire(f.requests, fl.out.id));
    cr_expect_eq(fl.gather.outcome, EDDY_ERR_NO_REPLY);
    cr_expect_eq(eddy_replies_count(fl.gather.list), 1);
    eddy__request_flow_reset(&fl);
    /* Cancelled after a reply, until the deadline: NoReply (cancel is not the end asked for). */
    sent(&f, &fl, 0, false, false);
    reply(&f, fl.out.id, false, &d);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    cr_expect_eq(fl.gather.outcome, EDDY_ERR_NO_REPLY);
    cr_expect_not(eddy__requests_give_up(f.requests, fl.out.id), "once");
    eddy__request_flow_reset(&fl);
    eddy_request_stats s = stats(&f);
    cr_expect_eq(s.sent, 4);
    cr_expect_eq(s.answered, 1);
    cr_expect_eq(s.no_reply, 3);
    cr_expect_eq(s.sent, s.answered + s.no_responders + s.no_reply + s.failed);
    fixture_free(&f);
}

Test(gather_core, refusals_and_options) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    eddy_error err;
    cr_expect_eq(eddy__request_flow_begin_gather(&fl, &f.ctx, NULL, false, "a.b", f.ev, &f.waiter,
                                                 eddy_now_ms(), &err),
                 EDDY_ERR_NO_DEADLINE);
    /* A zeroed struct (no _init) reads as the first release's layout. */
    eddy_gather_opts z = {0};
    z.deadline_ms = eddy_deadline_in(1000);
    z.max_replies = 5;
    eddy__gather g;
    eddy_request_opts ro;
    bool has;
    cr_assert_eq(eddy__gather_init(&g, &z, false, &ro, &has), EDDY_OK);
    cr_expect(has);
    cr_expect_eq(g.max, 5);
    cr_expect_eq(ro.deadline_ms, z.deadline_ms);
    eddy__gather_reset(&g);
    cr_expect_eq(stats(&f).sent, 0);
    fixture_free(&f);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* A request's sequence (src/bus/request_flow.h) with no server and no front end: the steps it asks
 * for, the replies fed back as parsed RESP, and what the counters and the table say after
 * each outcome. */
#include <criterion/criterion.h>
#include <msgpack.h>
#include <string.h>

#include "bus/request_flow.h"
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
    us.url = "memory://flow";
    us.ns = "flow";
    us.source = "/tests/flow";
    eddy_error err;
    cr_assert_eq(eddy__settings_copy(&f->s, &us, &err), EDDY_OK);
    f->requests = eddy__requests_new(&f->s);
    f->cache = eddy__registry_cache_new(EDDY__REGISTRY_CACHE_MS);
    f->publisher = eddy__publisher_new(&f->s);
    cr_assert(f->requests && f->cache && f->publisher);
    f->ctx =
        (eddy__request_ctx){f->requests, f->cache, f->publisher,    "flow", EDDY_CAP_REQUEST_REPLY,
                            true,        false,    "{flow}:inbox:x"};
    f->ev = eddy_event_new();
    eddy_event_set_id(f->ev, "q1");
    eddy_event_set_source(f->ev, "/tests/flow");
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

static eddy__req_step begin(fixture *f, eddy__request_flow *fl) {
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    eddy_error err;
    eddy_status st = eddy__request_flow_begin(fl, &f->ctx, &o, "tables.setup", f->ev, &f->waiter,
                                              eddy_now_ms(), &err);
    cr_assert_eq(st, EDDY_OK, "begin: %s", err.detail);
    cr_assert_eq(eddy__requests_in_flight(f->requests), 1, "in the table before anything is sent");
    return fl->step;
}

/* The registry question's reply: one responder on pattern, or nobody. */
static eddy__req_step answer_registry(eddy__request_flow *fl, const char *pattern) {
    char text[256];
    if (pattern)
        snprintf(text, sizeof(text), "*1\r\n$%zu\r\nr\tg\ti\tn\t%s\r\n", 8 + strlen(pattern),
                 pattern);
    else
        snprintf(text, sizeof(text), "*0\r\n");
    redisReply *replies[EDDY__REQUEST_MAX_CMDS] = {raw_parse(text), NULL};
    eddy__req_step step = eddy__request_flow_feed(fl, EDDY_OK, replies, NULL);
    cr_assert_null(replies[0], "the flow takes the registry's reply");
    return step;
}

/* The entry's replies: XADD's id (and SADD's count when the subject is new to the bus). */
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

Test(request_flow, asks_the_registry_then_sends_then_waits_counted_sent) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    cr_assert_eq(begin(&f, &fl), EDDY__REQ_ASK);
    cr_assert_str_eq(eddy__request_flow_cmds(&fl)->cmds[0].argv[0], "ZRANGEBYSCORE");
    cr_assert_eq(stats(&f).sent, 0, "nothing counted before the entry is written");
    cr_assert_eq(answer_registry(&fl, "tables.*"), EDDY__REQ_SEND);
    const eddy__cmdlist *entry = eddy__request_flow_cmds(&fl);
    cr_assert_str_eq(entry->cmds[entry->n - 1].argv[0], "XADD");
    cr_assert_eq(answer_entry(&fl), EDDY__REQ_WAIT);
    cr_assert_eq(stats(&f).sent, 1);
    cr_assert_eq(eddy__requests_in_flight(f.requests), 1, "waits for its reply in the table");
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);
    /* The positive answer is remembered: the next request goes straight to SEND. */
    cr_assert_eq(begin(&f, &fl), EDDY__REQ_SEND);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(request_flow, nothing_subscribed_ends_it_counted_no_responders) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl);
    cr_assert_eq(answer_registry(&fl, NULL), EDDY__REQ_END);
    cr_assert_eq(fl.st, EDDY_ERR_NO_RESPONDERS);
    eddy_request_stats s = stats(&f);
    cr_assert(s.sent == 1 && s.no_responders == 1, "sent %lu no_responders %lu",
              (unsigned long)s.sent, (unsigned long)s.no_responders);
    cr_assert_eq(eddy__requests_in_flight(f.requests), 0);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(request_flow, a_failed_step_ends_it_uncounted_with_the_transport_status) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl);
    eddy_error lost;
    lost.status = EDDY_ERR_IO;
    snprintf(lost.detail, sizeof(lost.detail), "connection: reset");
    redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_IO, none, &lost), EDDY__REQ_END);
    cr_assert_eq(fl.st, EDDY_ERR_IO);
    cr_assert_str_eq(fl.err.detail, "connection: reset");
    eddy__request_flow_reset(&fl);
    /* the same for the entry */
    begin(&f, &fl);
    answer_registry(&fl, "tables.setup");
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_IO, none, &lost), EDDY__REQ_END);
    eddy_request_stats s = stats(&f);
    cr_assert_eq(s.sent, 0, "nothing went out: not counted");
    cr_assert_eq(eddy__requests_in_flight(f.requests), 0);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

/* EDDY_ERR_TIMEOUT (written, no answer in time) is no failure of the request: it waits for its
 * deadline, which ends it NoReply, as when the deadline's timer fires before the step's. */
Test(request_flow, a_step_not_answered_in_time_leaves_the_request_to_its_deadline) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl);
    eddy_error late;
    late.status = EDDY_ERR_TIMEOUT;
    snprintf(late.detail, sizeof(late.detail), "no answer in time");
    redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_TIMEOUT, none, &late), EDDY__REQ_WAIT,
                 "the question");
    cr_assert_eq(eddy__requests_in_flight(f.requests), 1, "still in the table");
    cr_assert(eddy__requests_expire(f.requests, fl.out.id), "its deadline ends it");
    eddy_request_stats s = stats(&f);
    cr_assert(s.sent == 1 && s.no_reply == 1, "sent %lu no_reply %lu", (unsigned long)s.sent,
              (unsigned long)s.no_reply);
    eddy__request_flow_reset(&fl);
    /* the entry: it may have gone out, so it is counted Sent at once and a reply may come */
    begin(&f, &fl);
    answer_registry(&fl, "tables.setup");
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_TIMEOUT, none, &late), EDDY__REQ_WAIT,
                 "the entry");
    cr_assert_eq(stats(&f).sent, 2, "counted Sent when its answer was late");
    cr_assert(eddy__requests_expire(f.requests, fl.out.id));
    s = stats(&f);
    cr_assert(s.sent == 2 && s.no_reply == 2, "counted once: sent %lu no_reply %lu",
              (unsigned long)s.sent, (unsigned long)s.no_reply);
    eddy__request_flow_reset(&fl);
    /* ended meanwhile (the deadline's timer fired first): nobody's to report */
    begin(&f, &fl);
    cr_assert(eddy__requests_expire(f.requests, fl.out.id));
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_TIMEOUT, none, &late), EDDY__REQ_ENDED);
    cr_assert_eq(stats(&f).no_reply, 3);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(request_flow, ended_while_a_step_was_out_sends_nothing_more_and_counts_once) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl);
    /* Its deadline (or a cancel, a stop) takes it out while the question is out. */
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    cr_assert_eq(answer_registry(&fl, "tables.setup"), EDDY__REQ_ENDED, "not sent after that");
    eddy_request_stats s = stats(&f);
    cr_assert(s.sent == 1 && s.no_reply == 1, "counted once, NoReply");
    eddy__request_flow_reset(&fl);
    /* Ended while its entry was out: still counted Sent once (it went out), nothing else.
     * (The registry's yes is remembered now: straight to SEND.) */
    cr_assert_eq(begin(&f, &fl), EDDY__REQ_SEND);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    cr_assert_eq(answer_entry(&fl), EDDY__REQ_WAIT);
    s = stats(&f);
    cr_assert(s.sent == 2 && s.no_reply == 2, "sent %lu no_reply %lu", (unsigned long)s.sent,
              (unsigned long)s.no_reply);
    /* and a failure then is nobody's to report: it already ended */
    eddy__request_flow_reset(&fl);
    begin(&f, &fl);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
    cr_assert_eq(eddy__request_flow_feed(&fl, EDDY_ERR_IO, none, NULL), EDDY__REQ_ENDED);
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

Test(request_flow, refusals_leave_nothing_in_the_table_and_count_nothing) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    eddy_error err;
    eddy_request_opts none = {0, NULL, NULL};
    cr_assert_eq(eddy__request_flow_begin(&fl, &f.ctx, &none, "tables.setup", f.ev, &f.waiter,
                                          eddy_now_ms(), &err),
                 EDDY_ERR_NO_DEADLINE);
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    cr_assert_eq(eddy__request_flow_begin(&fl, &f.ctx, &o, "bad subject!", f.ev, &f.waiter,
                                          eddy_now_ms(), &err),
                 EDDY_ERR_INVALID_SUBJECT);
    f.ctx.active = false;
    cr_assert_eq(eddy__request_flow_begin(&fl, &f.ctx, &o, "tables.setup", f.ev, &f.waiter,
                                          eddy_now_ms(), &err),
                 EDDY_ERR_NOT_READY);
    cr_assert_eq(eddy__requests_in_flight(f.requests), 0);
    cr_assert_eq(stats(&f).sent, 0);
    fixture_free(&f);
}

static eddy__req_step begin_at(fixture *f, eddy__request_flow *fl, const char *subject,
                               long long now_ms) {
    eddy_request_opts o = {eddy_deadline_in(10000), NULL, NULL};
    eddy_error err;
    cr_assert_eq(
        eddy__request_flow_begin(fl, &f->ctx, &o, subject, f->ev, &f->waiter, now_ms, &err),
        EDDY_OK, "begin: %s", err.detail);
    return fl->step;
}

Test(request_flow, one_question_renews_an_old_answer_for_every_request_in_flight) {
    fixture f;
    fixture_init(&f);
    long long t0 = eddy_now_ms();
    eddy__request_flow a, b, c, d;
    cr_assert_eq(begin_at(&f, &a, "tables.setup", t0), EDDY__REQ_ASK);
    cr_assert_eq(answer_registry(&a, "tables.*"), EDDY__REQ_SEND);
    long long old = t0 + EDDY__REGISTRY_CACHE_MS + 1;
    cr_assert_eq(begin_at(&f, &b, "tables.setup", old), EDDY__REQ_ASK, "too old: asked again");
    cr_assert_eq(begin_at(&f, &c, "tables.setup", old + 1), EDDY__REQ_SEND,
                 "while that question is out, the old yes still counts");
    cr_assert_eq(begin_at(&f, &d, "chairs.setup", old + 1), EDDY__REQ_ASK,
                 "a subject it does not match is always asked: no 'no responders' from memory");
    /* b's question fails: it does not hold the others back, the next request asks. */
    redisReply *none[EDDY__REQUEST_MAX_CMDS] = {NULL, NULL};
    cr_assert_eq(eddy__request_flow_feed(&b, EDDY_ERR_IO, none, NULL), EDDY__REQ_END);
    eddy__request_flow e;
    cr_assert_eq(begin_at(&f, &e, "tables.setup", old + 2), EDDY__REQ_ASK);
    eddy__request_flow *all[] = {&a, &b, &c, &d, &e};
    for (int i = 0; i < 5; i++) {
        eddy__requests_give_up(f.requests, all[i]->out.id);
        eddy__request_flow_reset(all[i]);
    }
    fixture_free(&f);
}

static int packed;

static eddy_status pack_nothing(struct msgpack_packer *pk, void *user) {
    (void)user;
    packed++;
    return msgpack_pack_nil(pk) == 0 ? EDDY_OK : EDDY_ERR_NOMEM;
}

/* request_value: the refusals come before anything is built (the value is not packed), then
 * the event. */
Test(request_flow, request_value_refuses_before_packing) {
    fixture f;
    fixture_init(&f);
    eddy_request_opts opts = {.deadline_ms = 5000};
    eddy_event *ev = (eddy_event *)&f;
    eddy_error err = {0};
    packed = 0;
    cr_expect_eq(eddy__request_value_event(&f.s, &opts, false, false, EDDY_CAP_REQUEST_REPLY, "t.v",
                                           pack_nothing, NULL, 1000, &ev, &err),
                 EDDY_ERR_NOT_READY);
    cr_expect_null(ev);
    cr_expect_eq(packed, 0);
    cr_assert_eq(eddy__request_value_event(&f.s, &opts, false, true, EDDY_CAP_REQUEST_REPLY, "t.v",
                                           pack_nothing, NULL, 1000, &ev, &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_eq(packed, 1);
    cr_expect_str_eq(eddy_event_type(ev), "t.v");
    eddy_event_free(ev);
    fixture_free(&f);
}

Test(request_flow, the_outcome_names_the_request_and_a_gather_takes_the_tables) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    begin(&f, &fl);
    eddy_error err = {0};
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_OK, &err), EDDY_OK);
    cr_expect_eq(err.status, EDDY_OK, "nothing to say of a reply");
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_ERR_NO_REPLY, &err), EDDY_ERR_NO_REPLY);
    cr_expect(strstr(err.detail, fl.out.id) && strstr(err.detail, "no reply"), "%s", err.detail);
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_ERR_RESPONDER_FAILED, &err),
                 EDDY_ERR_RESPONDER_FAILED);
    cr_expect(strstr(err.detail, "the responder failed"), "%s", err.detail);
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);

    eddy_gather_opts go;
    eddy_gather_opts_init(&go);
    go.deadline_ms = eddy_deadline_in(10000);
    go.max_replies = 3;
    cr_assert_eq(eddy__request_flow_begin_gather(&fl, &f.ctx, &go, false, "tables.setup", f.ev,
                                                 &f.waiter, eddy_now_ms(), &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_ERR_NO_REPLY, &err), EDDY_ERR_NO_REPLY,
                 "not ended in the table: the waiter's status");
    cr_expect(strstr(err.detail, "0 replies") && strstr(err.detail, "3 asked"), "%s", err.detail);
    eddy__gather_finish(&fl.gather, EDDY__GATHER_DEADLINE);
    cr_assert(fl.gather.ended);
    eddy_status table = fl.gather.outcome;
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_OK, &err), table, "the table's outcome");
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

/* A gather that ended EDDY_OK while a reply that came could not be kept (gather.c drops it on
 * OOM and still counts it as come): the call says EDDY_ERR_NOMEM, not that it has them all. */
Test(request_flow, a_gather_missing_a_reply_it_could_not_keep_is_out_of_memory) {
    fixture f;
    fixture_init(&f);
    eddy__request_flow fl;
    eddy_gather_opts go;
    eddy_gather_opts_init(&go);
    go.deadline_ms = eddy_deadline_in(10000);
    go.max_replies = 2;
    eddy_error err = {0};
    cr_assert_eq(eddy__request_flow_begin_gather(&fl, &f.ctx, &go, false, "tables.setup", f.ev,
                                                 &f.waiter, eddy_now_ms(), &err),
                 EDDY_OK, "%s", err.detail);
    eddy_event *reply = eddy_event_dup(f.ev);
    cr_assert_not(eddy__gather_add(&fl.gather, EDDY_OK, &reply));
    fl.gather.dropped = 1; /* as gather.c counts a second reply it had no room to list */
    fl.gather.came = 2;
    eddy__gather_finish(&fl.gather, EDDY__GATHER_DEADLINE);
    cr_assert(fl.gather.ended);
    fl.gather.outcome = EDDY_OK; /* max_replies came: what the table decided */
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_OK, &err), EDDY_ERR_NOMEM);
    cr_expect(strstr(err.detail, "1 of its 2 replies") && strstr(err.detail, fl.out.id), "%s",
              err.detail);
    fl.gather.dropped = 0;
    cr_expect_eq(eddy__request_flow_outcome(&fl, EDDY_OK, &err), EDDY_OK, "all kept");
    cr_assert(eddy__requests_give_up(f.requests, fl.out.id));
    eddy__request_flow_reset(&fl);
    fixture_free(&f);
}

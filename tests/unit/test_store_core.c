/* SPDX-License-Identifier: BSD-3-Clause */
/* The event store's core with no server: the commands it builds (checked as text), the replies
 * it reads (written as RESP and parsed by hiredis), filters, and the memory engine's FUNCTION
 * and FCALL eddy_append (and the transactional handler's commit) run directly on an engine,
 * including a failed allocation at every point of an append or a commit. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/settings.h"
#include "error.h"
#include "events/entry.h"
#include "link/library.h"
#include "memory/engine.h"
#include "memory/internal.h"
#include "raw.h"
#include "store/store.h"
#include "store/store_op.h"
#include "timing.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static eddy__settings settings;
static eddy__store *core;

static void setup(void) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.ns = "t";
    s.max_event_size = 4096;
    s.stream_maxlen = 1000;
    cr_assert_eq(eddy__settings_copy(&settings, &s, NULL), EDDY_OK);
    core = eddy__store_new(&settings);
    cr_assert(core);
}

static void teardown(void) {
    eddy__store_free(core);
    eddy__settings_free(&settings);
}

TestSuite(store_core, .init = setup, .fini = teardown);

static eddy_event *ev_new(const char *id, const char *type) {
    eddy_event *ev = eddy_event_new();
    cr_assert(ev);
    cr_assert_eq(eddy_event_set_id(ev, id), EDDY_OK);
    cr_assert_eq(eddy_event_set_source(ev, "/t"), EDDY_OK);
    cr_assert_eq(eddy_event_set_type(ev, type), EDDY_OK);
    cr_assert_eq(eddy_event_set_data(ev, "d", 1), EDDY_OK);
    return ev;
}

/* The command as "ARG ARG ..." (arguments are text in these tests). */
static const char *cmd_text(const eddy__cmd *c) {
    static char buf[8192];
    buf[0] = '\0';
    for (int a = 0; a < c->argc; a++) {
        if (a)
            strcat(buf, " ");
        strncat(buf, c->argv[a], sizeof(buf) - strlen(buf) - 1);
    }
    return buf;
}

/* A RESP writer for entry replies. */
typedef struct rb {
    char *p;
    size_t len, cap;
} rb;

static void rb_put(rb *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void rb_fmt(rb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rb_fmt(rb *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    rb_put(b, tmp, (size_t)n);
}

static void rb_bulk(rb *b, const char *s, size_t n) {
    rb_fmt(b, "$%zu\r\n", n);
    rb_put(b, s, n);
    rb_put(b, "\r\n", 2);
}

/* One entry [id, [event fields..., extra pairs...]]; extra is NULL-terminated pairs. */
static void rb_entry(rb *b, const char *id, const eddy_event *ev, const char *const *extra) {
    eddy__cmd fields;
    eddy__cmd_init(&fields);
    if (ev)
        cr_assert_eq(eddy__entry_encode(ev, &fields), EDDY_OK);
    int nextra = 0;
    while (extra && extra[nextra])
        nextra++;
    rb_put(b, "*2\r\n", 4);
    rb_bulk(b, id, strlen(id));
    rb_fmt(b, "*%d\r\n", fields.argc + nextra);
    for (int i = 0; i < fields.argc; i++)
        rb_bulk(b, fields.argv[i], fields.argvlen[i]);
    for (int i = 0; i < nextra; i++)
        rb_bulk(b, extra[i], strlen(extra[i]));
    eddy__cmd_reset(&fields);
}

/* A stored entry as the store writes it. */
static void rb_stored(rb *b, long long id, const char *stream, long long version,
                      long long position, const char *type) {
    char evid[32], ids[32], v[32], p[32];
    snprintf(evid, sizeof(evid), "e%lld", position);
    snprintf(ids, sizeof(ids), "%lld-0", id);
    snprintf(v, sizeof(v), "%lld", version);
    snprintf(p, sizeof(p), "%lld", position);
    eddy_event *ev = ev_new(evid, type);
    const char *extra[] = {"_stream", stream, "_version", v, "_position", p, NULL};
    rb_entry(b, ids, ev, extra);
    eddy_event_free(ev);
}

typedef struct seen {
    int n;
    char ids[300][32];
    char streams[300][32];
    long long versions[300], positions[300];
    int stop_at; /* 1-based call that returns stop_status; 0 never */
    eddy_status stop_status;
} seen;

static eddy_status record(const eddy_event *ev, const eddy_event_meta *m, void *user) {
    seen *s = user;
    if (s->stop_at && s->n + 1 == s->stop_at)
        return s->stop_status;
    cr_assert(s->n < 300);
    snprintf(s->ids[s->n], 32, "%s", eddy_event_id(ev));
    snprintf(s->streams[s->n], 32, "%s", m->stream_id);
    s->versions[s->n] = m->version;
    s->positions[s->n] = m->position;
    s->n++;
    return EDDY_OK;
}

/* ---- ids, filters ----------------------------------------------------------------------- */

Test(store_core, ids_must_be_safe_key_parts) {
    char long_id[200];
    memset(long_id, 'a', 128);
    long_id[128] = '\0';
    cr_expect_eq(eddy__store_check_id("order-42", "stream id", NULL), EDDY_OK);
    cr_expect_eq(eddy__store_check_id(long_id, "stream id", NULL), EDDY_OK);
    long_id[128] = 'a';
    long_id[129] = '\0';
    const char *bad[] = {"", "a b", "a:b", "{a}", "a}", "tab\there", "\x7f", long_id};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        eddy_error err = {0};
        cr_expect_eq(eddy__store_check_id(bad[i], "feed id", &err), EDDY_ERR_INVALID_ARGUMENT,
                     "'%s' accepted", bad[i]);
        cr_expect(strstr(err.detail, "feed id"), "%s", err.detail);
    }
    cr_expect_eq(eddy__store_check_id(NULL, "feed id", NULL), EDDY_ERR_INVALID_ARGUMENT);
}

Test(store_core, type_filters) {
    const char *types[] = {"b", "a", "b", "c"};
    eddy_filter *f = eddy_filter_types(types, 4);
    cr_assert(f);
    eddy_event *a = ev_new("1", "a"), *d = ev_new("2", "d");
    cr_expect(eddy_filter_matches(f, a));
    cr_expect_not(eddy_filter_matches(f, d));
    cr_expect_not(eddy_filter_matches(f, NULL));
    cr_expect(eddy_filter_matches(NULL, d), "no filter passes everything");
    eddy_filter *none = eddy_filter_types(NULL, 0);
    cr_assert(none, "an empty type set is a filter that passes nothing");
    cr_expect_not(eddy_filter_matches(none, a));
    const char *with_null[] = {"a", NULL};
    cr_expect_null(eddy_filter_types(with_null, 2));
    cr_expect_null(eddy_filter_types(NULL, 3));
    eddy_filter_free(f);
    eddy_filter_free(none);
    eddy_filter_free(NULL);
    eddy_event_free(a);
    eddy_event_free(d);
}

/* ---- loading the library ---------------------------------------------------------------- */

Test(store_core, load_command_and_replies) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__library_load_cmds(&l), EDDY_OK);
    cr_assert_eq(l.n, 1);
    cr_expect_str_eq(l.cmds[0].argv[0], "FUNCTION");
    cr_expect_str_eq(l.cmds[0].argv[1], "LOAD");
    cr_expect_str_eq(l.cmds[0].argv[2], "REPLACE");
    cr_expect_str_eq(l.cmds[0].argv[3], eddy__library_lua);
    cr_expect(strncmp(eddy__library_lua, "#!lua name=" EDDY__STORE_LIBRARY "\n",
                      strlen("#!lua name=" EDDY__STORE_LIBRARY "\n")) == 0);
    char want[64];
    snprintf(want, sizeof(want), "eddy_%d_%d_%d", EDDY_VERSION_MAJOR, EDDY_VERSION_MINOR,
             EDDY_VERSION_PATCH);
    cr_expect_str_eq(EDDY__STORE_LIBRARY, want, "the library name carries the version");
    cr_assert_eq(strlen(EDDY__STORE_LIBRARY), 10, "the RESP replies below spell its length");

    struct {
        const char *reply;
        eddy_status want;
    } cases[] = {
        {"$10\r\n" EDDY__STORE_LIBRARY "\r\n", EDDY_OK},
        {"-ERR unknown command 'FUNCTION', with args beginning with: 'LOAD' \r\n",
         EDDY_ERR_NOT_SUPPORTED},
        {"-NOPERM this user has no permissions\r\n", EDDY_ERR_BACKEND},
        {"$5\r\nother\r\n", EDDY_ERR_PROTOCOL},
        {":1\r\n", EDDY_ERR_PROTOCOL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = raw_parse(cases[i].reply);
        size_t next = 99;
        eddy_error err = {0};
        cr_expect_eq(eddy__library_load_result(&l, 0, &r, &next, &err), cases[i].want, "%s: %s",
                     cases[i].reply, err.detail);
        cr_expect_eq(next, 1);
        freeReplyObject(r);
    }
    redisReply *none = NULL;
    cr_expect_eq(eddy__library_load_result(&l, 0, &none, NULL, NULL), EDDY_ERR_IO);
    eddy__cmdlist_reset(&l);
}

/* ---- append ----------------------------------------------------------------------------- */

Test(store_core, append_command_without_publishing) {
    eddy_event *e1 = ev_new("a1", "t.one"), *e2 = ev_new("a2", "t.two");
    const eddy_event *evs[] = {e1, e2};
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__store_append_prepare(core, "order-1", evs, 2, NULL, &l, NULL), EDDY_OK);
    cr_assert_eq(l.n, 1);
    cr_expect_str_eq(cmd_text(&l.cmds[0]),
                     "FCALL " EDDY__STORE_APPEND_FN
                     " 3 {t}:es:s:order-1 {t}:es:all {t}:es:pos -1 order-1 2 "
                     "10 specversion 1.0 id a1 source /t type t.one data d "
                     "10 specversion 1.0 id a2 source /t type t.two data d  0");
    eddy__cmdlist_reset(&l);
    eddy_event_free(e1);
    eddy_event_free(e2);
}

Test(store_core, append_command_with_publishing_and_expected_version) {
    eddy_event *e1 = ev_new("a1", "t.one");
    const eddy_event *evs[] = {e1};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    cr_expect_eq(o.expected_version, EDDY_ANY_VERSION);
    cr_expect_null(o.publish_subject);
    o.expected_version = 7;
    o.publish_subject = "orders.placed";
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__store_append_prepare(core, "o", evs, 1, &o, &l, NULL), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[0]),
                     "FCALL " EDDY__STORE_APPEND_FN
                     " 5 {t}:es:s:o {t}:es:all {t}:es:pos {t}:s:orders.placed "
                     "{t}:subjects 7 o 1 10 specversion 1.0 id a1 source /t type t.one data d "
                     "orders.placed 1000");
    eddy__cmdlist_reset(&l);
    eddy_event_free(e1);
}

Test(store_core, append_refusals_send_nothing) {
    eddy_event *good = ev_new("g", "t");
    eddy_event *invalid = eddy_event_new(); /* no id, source, type */
    eddy_event *big = ev_new("big", "t");
    char data[5000];
    memset(data, 'x', sizeof(data));
    cr_assert_eq(eddy_event_set_data(big, data, sizeof(data)), EDDY_OK);
    eddy_event *failed = ev_new("f", "t");
    cr_assert_eq(eddy_event_set_extension(failed, "messagingfailed", "true", NULL), EDDY_OK);
    eddy_event *many = ev_new("m", "t");
    for (int i = 0; i < 2000; i++) {
        char name[16];
        snprintf(name, sizeof(name), "x%d", i);
        cr_assert_eq(eddy_event_set_extension(many, name, "", NULL), EDDY_OK);
    }
    eddy_append_opts publish;
    eddy_append_opts_init(&publish);
    publish.publish_subject = "orders.placed";
    eddy_append_opts bad_subject = publish;
    bad_subject.publish_subject = "orders..placed";
    eddy_append_opts bad_version;
    eddy_append_opts_init(&bad_version);
    bad_version.expected_version = -2;

    const eddy_event *one[] = {good};
    const eddy_event *with_null[] = {good, NULL};
    const eddy_event *with_invalid[] = {good, invalid};
    const eddy_event *with_big[] = {big};
    const eddy_event *with_failed[] = {failed};
    const eddy_event *with_many[] = {many};
    struct {
        const char *stream;
        const eddy_event *const *evs;
        size_t n;
        const eddy_append_opts *opts;
        eddy_status want;
        const char *detail;
    } cases[] = {
        {"s", one, 0, NULL, EDDY_ERR_INVALID_ARGUMENT, "n is 0"},
        {"s", NULL, 1, NULL, EDDY_ERR_INVALID_ARGUMENT, "events is NULL"},
        {NULL, one, 1, NULL, EDDY_ERR_INVALID_ARGUMENT, "stream id is NULL"},
        {"a:b", one, 1, NULL, EDDY_ERR_INVALID_ARGUMENT, "stream id 'a:b'"},
        {"s", with_null, 2, NULL, EDDY_ERR_INVALID_ARGUMENT, "event 1 is NULL"},
        {"s", with_invalid, 2, NULL, EDDY_ERR_INVALID_EVENT, "event 1: "},
        {"s", with_big, 1, NULL, EDDY_ERR_TOO_LARGE, "the limit is 4096"},
        {"s", with_many, 1, NULL, EDDY_ERR_TOO_LARGE, "2000 extensions"},
        {"s", with_failed, 1, &publish, EDDY_ERR_RESERVED_ATTRIBUTE, "messagingfailed"},
        {"s", one, 1, &bad_subject, EDDY_ERR_INVALID_SUBJECT, ""},
        {"s", one, 1, &bad_version, EDDY_ERR_INVALID_ARGUMENT, "expected version -2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        eddy__cmdlist l;
        eddy__cmdlist_init(&l);
        eddy_error err = {0};
        eddy_status st = eddy__store_append_prepare(core, cases[i].stream, cases[i].evs, cases[i].n,
                                                    cases[i].opts, &l, &err);
        cr_expect_eq(st, cases[i].want, "case %zu: %s (%s)", i, eddy_status_name(st), err.detail);
        cr_expect_eq(err.status, cases[i].want, "case %zu", i);
        cr_expect(strstr(err.detail, cases[i].detail), "case %zu: '%s'", i, err.detail);
        cr_expect_eq(l.n, 0, "case %zu built a command", i);
        eddy__cmdlist_reset(&l);
    }
    /* The reserved attribute only matters when publishing. */
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_expect_eq(eddy__store_append_prepare(core, "s", with_failed, 1, NULL, &l, NULL), EDDY_OK);
    eddy__cmdlist_reset(&l);
    cr_expect_eq(eddy__store_append_prepare(NULL, "s", one, 1, NULL, &l, NULL),
                 EDDY_ERR_INVALID_ARGUMENT);
    eddy_event_free(good);
    eddy_event_free(invalid);
    eddy_event_free(big);
    eddy_event_free(failed);
    eddy_event_free(many);
}

Test(store_core, append_replies) {
    eddy_event *e = ev_new("a", "t");
    const eddy_event *evs[] = {e};
    eddy_append_opts o;
    eddy_append_opts_init(&o);
    o.expected_version = 3;
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__store_append_prepare(core, "acct-9", evs, 1, &o, &l, NULL), EDDY_OK);

    struct {
        const char *reply;
        eddy_status want;
        bool reload;
        long long version;
        const char *detail;
    } cases[] = {
        {":4\r\n", EDDY_OK, false, 4, ""},
        {"-VERSIONCONFLICT 5\r\n", EDDY_ERR_VERSION_CONFLICT, false, -1,
         "stream 'acct-9': expected version 3, actual version 5"},
        {"-VERSIONCONFLICT x\r\n", EDDY_ERR_PROTOCOL, false, -1, "VERSIONCONFLICT x"},
        {"-ERR Function not found\r\n", EDDY_ERR_BACKEND, true, -1, "does not know"},
        {"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", EDDY_ERR_BACKEND,
         false, -1, "WRONGTYPE"},
        {"-ERR eddy_append: bad field count\r\n", EDDY_ERR_BACKEND, false, -1, "bad field"},
        {"$1\r\n4\r\n", EDDY_ERR_PROTOCOL, false, -1, ""},
        {":0\r\n", EDDY_ERR_PROTOCOL, false, -1, ""},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = raw_parse(cases[i].reply);
        long long version = -1;
        bool reload = !cases[i].reload;
        eddy_error err = {0};
        cr_expect_eq(eddy__store_append_result(&l, 0, &r, &version, &reload, &err), cases[i].want,
                     "%s: %s", cases[i].reply, err.detail);
        cr_expect_eq(reload, cases[i].reload, "%s", cases[i].reply);
        cr_expect_eq(version, cases[i].version, "%s", cases[i].reply);
        cr_expect(strstr(err.detail, cases[i].detail), "%s: '%s'", cases[i].reply, err.detail);
        freeReplyObject(r);
    }
    redisReply *none = NULL;
    bool reload;
    cr_expect_eq(eddy__store_append_result(&l, 0, &none, NULL, &reload, NULL), EDDY_ERR_IO);
    cr_expect_eq(eddy__store_append_result(&l, 1, &none, NULL, &reload, NULL),
                 EDDY_ERR_INVALID_ARGUMENT, "no command there");

    /* After a reload the append follows the load in one pipeline. */
    eddy__cmdlist both;
    eddy__cmdlist_init(&both);
    cr_assert_eq(eddy__library_load_cmds(&both), EDDY_OK);
    cr_assert_eq(eddy__store_append_prepare(core, "acct-9", evs, 1, &o, &both, NULL), EDDY_OK);
    redisReply *rs[2] = {raw_parse("$10\r\n" EDDY__STORE_LIBRARY "\r\n"), raw_parse(":4\r\n")};
    size_t next;
    long long version = 0;
    cr_expect_eq(eddy__library_load_result(&both, 0, rs, &next, NULL), EDDY_OK);
    cr_expect_eq(next, 1);
    cr_expect_eq(eddy__store_append_result(&both, next, rs, &version, &reload, NULL), EDDY_OK);
    cr_expect_eq(version, 4);
    freeReplyObject(rs[0]);
    freeReplyObject(rs[1]);
    eddy__cmdlist_reset(&both);
    eddy__cmdlist_reset(&l);
    eddy_event_free(e);
}

/* ---- one op's life (store_op.h) --------------------------------------------------------- */

Test(store_core, op_sends_an_idempotent_op_once_more_after_a_loss_not_an_append) {
    eddy_error io = {0};
    eddy__fail(&io, EDDY_ERR_IO, "connection to 127.0.0.1:1: closed by the server");
    eddy__store_op read;
    eddy__store_op_init(&read, false, 0);
    cr_expect_not(eddy__store_op_lost(&read, EDDY_ERR_IO, &io, true, true),
                  "not after the connection made for it failed");
    cr_expect_not(eddy__store_op_lost(&read, EDDY_ERR_TIMEOUT, &io, true, false),
                  "not after a timeout: the wait would double");
    cr_expect(eddy__store_op_lost(&read, EDDY_ERR_IO, &io, true, false), "once");
    cr_expect_not(eddy__store_op_lost(&read, EDDY_ERR_IO, &io, true, false), "only once");
    eddy__store_op_reset(&read);

    eddy__store_op append;
    eddy__store_op_init(&append, true, eddy__mono_ms() + 60000);
    cr_expect_not(eddy__store_op_lost(&append, EDDY_ERR_IO, &io, true, false),
                  "an append the server may have run is never sent again");
    eddy__store_op_reset(&append);
}

Test(store_core, op_loads_the_library_in_front_of_the_same_append_once) {
    eddy_event *e = ev_new("e-1", "t.ev");
    const eddy_event *evs[] = {e};
    eddy__store_op op;
    eddy__store_op_init(&op, true, eddy__mono_ms() + 60000);
    cr_assert_eq(eddy__store_append_prepare(core, "acct-9", evs, 1, NULL, &op.cmds, NULL), EDDY_OK);
    char fcall[512];
    snprintf(fcall, sizeof(fcall), "%s", cmd_text(&op.cmds.cmds[0]));

    redisReply *lost = raw_parse("-ERR Function not found\r\n");
    bool again = false;
    eddy_error err = {0};
    eddy__store_op_append_result(&op, &lost, NULL, &again, &settings.log, &err);
    freeReplyObject(lost);
    cr_assert(again, "a lost library: sent again");
    cr_assert_eq(op.cmds.n, 2);
    cr_expect(eddy__library_is_load(&op.cmds, 0), "the load first");
    cr_expect_str_eq(cmd_text(&op.cmds.cmds[1]), fcall, "then the same append");

    redisReply *rs[2] = {raw_parse("$10\r\n" EDDY__STORE_LIBRARY "\r\n"),
                         raw_parse("-ERR Function not found\r\n")};
    cr_expect_eq(eddy__store_op_append_result(&op, rs, NULL, &again, &settings.log, &err),
                 EDDY_ERR_BACKEND, "lost again: a failure");
    cr_expect_not(again, "only once");
    freeReplyObject(rs[1]);
    rs[1] = raw_parse(":1\r\n");
    long long version = 0;
    cr_expect_eq(eddy__store_op_append_result(&op, rs, &version, &again, &settings.log, &err),
                 EDDY_OK, "%s", err.detail);
    cr_expect_eq(version, 1);
    freeReplyObject(rs[0]);
    freeReplyObject(rs[1]);
    eddy__store_op_reset(&op);
    eddy_event_free(e);
}

/* ---- reads ------------------------------------------------------------------------------ */

Test(store_core, read_commands) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__store_read_stream_cmd(core, "o-1", 5, &l, NULL), EDDY_OK);
    cr_assert_eq(eddy__store_read_all_cmd(core, 0, 7, &l, NULL), EDDY_OK);
    cr_assert_eq(eddy__store_head_cmd(core, &l), EDDY_OK);
    cr_assert_eq(l.n, 3);
    cr_expect_str_eq(cmd_text(&l.cmds[0]), "XRANGE {t}:es:s:o-1 (5-0 + COUNT 256");
    cr_expect_str_eq(cmd_text(&l.cmds[1]), "XRANGE {t}:es:all (0-0 + COUNT 7");
    cr_expect_str_eq(cmd_text(&l.cmds[2]), "GET {t}:es:pos");
    eddy_error err = {0};
    cr_expect_eq(eddy__store_read_stream_cmd(core, "o-1", -1, &l, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "negative"));
    cr_expect_eq(eddy__store_read_stream_cmd(core, "o 1", 0, &l, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__store_read_all_cmd(core, -1, 7, &l, NULL), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__store_read_all_cmd(core, 0, 0, &l, &err), EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "max_entries"));
    cr_expect_eq(l.n, 3, "refusals add nothing");
    eddy__cmdlist_reset(&l);
}

Test(store_core, read_stream_pages) {
    rb b = {0};
    rb_put(&b, "*3\r\n", 4);
    rb_stored(&b, 1, "o-1", 1, 4, "t");
    rb_stored(&b, 2, "o-1", 2, 9, "t");
    rb_stored(&b, 3, "o-1", 3, 12, "t");
    redisReply *r = raw_parse_len(b.p, b.len);
    seen s = {0};
    long long after = 0;
    bool more = true;
    cr_assert_eq(eddy__store_read_stream_page(core, "o-1", r, record, &s, &after, &more, NULL),
                 EDDY_OK);
    cr_expect_eq(s.n, 3);
    cr_expect_eq(after, 3);
    cr_expect_not(more, "a short page is the last");
    cr_expect_str_eq(s.ids[1], "e9");
    cr_expect_str_eq(s.streams[1], "o-1");
    cr_expect_eq(s.versions[1], 2);
    cr_expect_eq(s.positions[1], 9);

    /* The callback stops the read with its status; *after is the last one it took. */
    seen stop = {.stop_at = 2, .stop_status = EDDY_ERR_HANDLER_FAILED};
    after = 0;
    eddy_error err = {0};
    cr_expect_eq(eddy__store_read_stream_page(core, "o-1", r, record, &stop, &after, &more, &err),
                 EDDY_ERR_HANDLER_FAILED);
    cr_expect_eq(after, 1);
    cr_expect(strstr(err.detail, "position 9"), "%s", err.detail);
    freeReplyObject(r);
    free(b.p);

    /* A full page says more may follow. */
    rb full = {0};
    rb_fmt(&full, "*%d\r\n", EDDY__STORE_PAGE);
    for (int i = 1; i <= EDDY__STORE_PAGE; i++)
        rb_stored(&full, i, "o-1", i, i, "t");
    r = raw_parse_len(full.p, full.len);
    seen many = {0}; /* holds 300: enough for one page */
    after = 0;
    cr_assert_eq(eddy__store_read_stream_page(core, "o-1", r, record, &many, &after, &more, NULL),
                 EDDY_OK);
    cr_expect(more);
    cr_expect_eq(after, EDDY__STORE_PAGE);
    freeReplyObject(r);
    free(full.p);
}

/* One entry reply that read_stream of "o-1" (by_version) or read_all must refuse. */
static void expect_refused(bool by_version, const char *text, size_t len, eddy_status want,
                           const char *detail) {
    redisReply *r = raw_parse_len(text, len);
    seen s = {0};
    eddy_error err = {0};
    eddy_status st;
    if (by_version) {
        long long after = 0;
        bool more;
        st = eddy__store_read_stream_page(core, "o-1", r, record, &s, &after, &more, &err);
    } else {
        long long next = -1;
        st = eddy__store_read_all_page(core, r, NULL, record, &s, 0, &next, &err);
        cr_expect_eq(next, 0, "nothing examined");
    }
    cr_expect_eq(st, want, "%s (%s)", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, detail), "'%s' lacks '%s'", err.detail, detail);
    cr_expect_eq(s.n, 0);
    freeReplyObject(r);
}

Test(store_core, entries_that_do_not_decode_are_reported_with_their_place) {
    eddy_event *ev = ev_new("x", "t");
    struct {
        bool by_version;
        const char *id;
        const char *const extra[10];
        bool with_event;
        eddy_status want;
        const char *detail;
    } cases[] = {
        {false,
         "3-0",
         {"_stream", "o-1", "_version", "1", "_position", "3"},
         false,
         EDDY_ERR_MALFORMED,
         "position 3): field 'specversion': missing"},
        {false,
         "3-0",
         {"_stream", "o-1", "_version", "1"},
         true,
         EDDY_ERR_MALFORMED,
         "position 3: missing or bad store metadata"},
        {false,
         "3-0",
         {"_stream", "o-1", "_version", "x", "_position", "3"},
         true,
         EDDY_ERR_MALFORMED,
         "position 3: missing"},
        {false,
         "3-0",
         {"_stream", "o-1", "_version", "1", "_position", "4"},
         true,
         EDDY_ERR_MALFORMED,
         "position 3: the store metadata does not match"},
        {false,
         "3-1",
         {"_stream", "o-1", "_version", "1", "_position", "3"},
         true,
         EDDY_ERR_MALFORMED,
         "entry '3-1' is not a store entry id"},
        {false,
         "0-0",
         {"_stream", "o-1", "_version", "1", "_position", "0"},
         true,
         EDDY_ERR_MALFORMED,
         "entry '0-0'"},
        {true,
         "2-0",
         {"_stream", "o-2", "_version", "2", "_position", "5"},
         true,
         EDDY_ERR_MALFORMED,
         "version 2: the store metadata does not match"},
        {true,
         "2-0",
         {"_stream", "o-1", "_version", "3", "_position", "5"},
         true,
         EDDY_ERR_MALFORMED,
         "version 2: the store metadata"},
        {true,
         "2-0",
         {"_stream", "", "_version", "2", "_position", "5"},
         true,
         EDDY_ERR_MALFORMED,
         "version 2: missing"},
        {true,
         "2-0",
         {"_stream", "o-1", "_version", "2", "_position", "5", "bogus", "1"},
         true,
         EDDY_ERR_MALFORMED,
         "stream 'o-1' version 2 (position 5): field 'bogus'"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rb b = {0};
        rb_put(&b, "*1\r\n", 4);
        rb_entry(&b, cases[i].id, cases[i].with_event ? ev : NULL, cases[i].extra);
        expect_refused(cases[i].by_version, b.p, b.len, cases[i].want, cases[i].detail);
        free(b.p);
    }
    /* An event above max_event_size. */
    eddy_event *big = ev_new("big", "t");
    char data[5000];
    memset(data, 'y', sizeof(data));
    cr_assert_eq(eddy_event_set_data(big, data, sizeof(data)), EDDY_OK);
    rb b = {0};
    rb_put(&b, "*1\r\n", 4);
    const char *meta[] = {"_stream", "o-1", "_version", "1", "_position", "7", NULL};
    rb_entry(&b, "7-0", big, meta);
    expect_refused(false, b.p, b.len, EDDY_ERR_TOO_LARGE, "position 7");
    free(b.p);
    /* An entry whose fields are gone, and shapes that are not XRANGE replies. */
    const char nil_fields[] = "*1\r\n*2\r\n$3\r\n4-0\r\n*-1\r\n";
    expect_refused(false, nil_fields, sizeof(nil_fields) - 1, EDDY_ERR_MALFORMED,
                   "position 4: entry without fields");
    const char int_field[] = "*1\r\n*2\r\n$3\r\n4-0\r\n*2\r\n:1\r\n:2\r\n";
    expect_refused(false, int_field, sizeof(int_field) - 1, EDDY_ERR_PROTOCOL, "not a string");
    expect_refused(false, ":1\r\n", 4, EDDY_ERR_PROTOCOL, "unexpected reply");
    expect_refused(true, "-ERR boom\r\n", 11, EDDY_ERR_BACKEND, "boom");
    long long next = -1;
    cr_expect_eq(eddy__store_read_all_page(core, NULL, NULL, record, NULL, 5, &next, NULL),
                 EDDY_ERR_IO);
    cr_expect_eq(next, 5);
    eddy_event_free(big);
    eddy_event_free(ev);
}

Test(store_core, read_all_filters_and_advances) {
    rb b = {0};
    rb_put(&b, "*5\r\n", 4);
    rb_stored(&b, 11, "a", 1, 11, "keep");
    rb_stored(&b, 12, "b", 1, 12, "drop");
    rb_stored(&b, 13, "a", 2, 13, "keep");
    rb_stored(&b, 14, "c", 1, 14, "drop");
    rb_stored(&b, 15, "c", 2, 15, "drop");
    redisReply *r = raw_parse_len(b.p, b.len);
    const char *types[] = {"keep"};
    eddy_filter *f = eddy_filter_types(types, 1);
    seen s = {0};
    long long next = 0;
    cr_assert_eq(eddy__store_read_all_page(core, r, f, record, &s, 10, &next, NULL), EDDY_OK);
    cr_expect_eq(s.n, 2);
    cr_expect_eq(s.positions[0], 11);
    cr_expect_eq(s.positions[1], 13);
    cr_expect_str_eq(s.streams[1], "a");
    cr_expect_eq(s.versions[1], 2);
    cr_expect_eq(next, 15, "filtered entries advance the position too");

    /* Stopped by the callback at 13: 11 and 12 were examined. */
    seen stop = {.stop_at = 2, .stop_status = EDDY_ERR_CANCELLED};
    cr_expect_eq(eddy__store_read_all_page(core, r, f, record, &stop, 10, &next, NULL),
                 EDDY_ERR_CANCELLED);
    cr_expect_eq(next, 12);
    freeReplyObject(r);

    /* An empty page leaves the position. */
    r = raw_parse("*0\r\n");
    cr_assert_eq(eddy__store_read_all_page(core, r, f, record, &s, 15, &next, NULL), EDDY_OK);
    cr_expect_eq(next, 15);
    freeReplyObject(r);
    eddy_filter_free(f);
    free(b.p);
}

Test(store_core, head_replies) {
    struct {
        const char *reply;
        eddy_status want;
        long long pos;
    } cases[] = {
        {"$-1\r\n", EDDY_OK, 0},
        {"$2\r\n42\r\n", EDDY_OK, 42},
        {"$3\r\nabc\r\n", EDDY_ERR_MALFORMED, -1},
        {":4\r\n", EDDY_ERR_PROTOCOL, -1},
        {"-ERR x\r\n", EDDY_ERR_BACKEND, -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        redisReply *r = raw_parse(cases[i].reply);
        long long pos = -1;
        cr_expect_eq(eddy__store_head_result(r, &pos, NULL), cases[i].want, "%s", cases[i].reply);
        cr_expect_eq(pos, cases[i].pos, "%s", cases[i].reply);
        freeReplyObject(r);
    }
    long long pos;
    cr_expect_eq(eddy__store_head_result(NULL, &pos, NULL), EDDY_ERR_IO);
}

/* ---- checkpoints ------------------------------------------------------------------------ */

Test(store_core, checkpoint_commands_and_replies) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__ckpt_cmd(core, EDDY__CKPT_EXISTS, "feed-1", NULL, &l, NULL), EDDY_OK);
    cr_assert_eq(eddy__ckpt_cmd(core, EDDY__CKPT_READ, "feed-1", NULL, &l, NULL), EDDY_OK);
    cr_assert_eq(eddy__ckpt_cmd(core, EDDY__CKPT_SAVE, "feed-1", "42", &l, NULL), EDDY_OK);
    cr_assert_eq(eddy__ckpt_cmd(core, EDDY__CKPT_REMOVE, "feed-1", NULL, &l, NULL), EDDY_OK);
    cr_expect_str_eq(cmd_text(&l.cmds[0]), "EXISTS {t}:ckpt:feed-1");
    cr_expect_str_eq(cmd_text(&l.cmds[1]), "GET {t}:ckpt:feed-1");
    cr_expect_str_eq(cmd_text(&l.cmds[2]), "SET {t}:ckpt:feed-1 42");
    cr_expect_str_eq(cmd_text(&l.cmds[3]), "DEL {t}:ckpt:feed-1");
    eddy_error err = {0};
    cr_expect_eq(eddy__ckpt_cmd(core, EDDY__CKPT_SAVE, "feed-1", NULL, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect_eq(eddy__ckpt_cmd(core, EDDY__CKPT_READ, "{feed}", NULL, &l, &err),
                 EDDY_ERR_INVALID_ARGUMENT);
    cr_expect(strstr(err.detail, "feed id '{feed}'"), "%s", err.detail);
    cr_expect_eq(l.n, 4);
    eddy__cmdlist_reset(&l);

    bool b = false;
    redisReply *r = raw_parse(":1\r\n");
    cr_expect_eq(eddy__ckpt_exists_result(r, &b, NULL), EDDY_OK);
    cr_expect(b);
    freeReplyObject(r);
    r = raw_parse(":0\r\n");
    cr_expect_eq(eddy__ckpt_exists_result(r, &b, NULL), EDDY_OK);
    cr_expect_not(b);
    freeReplyObject(r);
    r = raw_parse(":2\r\n");
    cr_expect_eq(eddy__ckpt_exists_result(r, &b, NULL), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);

    char buf[4];
    r = raw_parse("$3\r\n123\r\n");
    cr_expect_eq(eddy__ckpt_read_result(r, buf, sizeof(buf), &b, NULL), EDDY_OK);
    cr_expect(b);
    cr_expect_str_eq(buf, "123");
    freeReplyObject(r);
    r = raw_parse("$4\r\n1234\r\n");
    cr_expect_eq(eddy__ckpt_read_result(r, buf, sizeof(buf), &b, &err), EDDY_ERR_TOO_LARGE);
    cr_expect(strstr(err.detail, "4 bytes"), "%s", err.detail);
    cr_expect_str_eq(buf, "");
    freeReplyObject(r);
    r = raw_parse("$-1\r\n");
    cr_expect_eq(eddy__ckpt_read_result(r, buf, sizeof(buf), &b, NULL), EDDY_OK);
    cr_expect_not(b);
    freeReplyObject(r);
    r = raw_parse(":1\r\n");
    cr_expect_eq(eddy__ckpt_read_result(r, buf, sizeof(buf), &b, NULL), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);

    r = raw_parse("+OK\r\n");
    cr_expect_eq(eddy__ckpt_write_result(r, EDDY__CKPT_SAVE, NULL), EDDY_OK);
    cr_expect_eq(eddy__ckpt_write_result(r, EDDY__CKPT_REMOVE, NULL), EDDY_ERR_PROTOCOL);
    freeReplyObject(r);
    r = raw_parse(":0\r\n");
    cr_expect_eq(eddy__ckpt_write_result(r, EDDY__CKPT_REMOVE, NULL), EDDY_OK);
    freeReplyObject(r);
    r = raw_parse("-READONLY You can't write against a read only replica.\r\n");
    cr_expect_eq(eddy__ckpt_write_result(r, EDDY__CKPT_SAVE, &err), EDDY_ERR_BACKEND);
    cr_expect(strstr(err.detail, "READONLY"));
    freeReplyObject(r);
    cr_expect_eq(eddy__ckpt_write_result(NULL, EDDY__CKPT_SAVE, NULL), EDDY_ERR_IO);
}

/* ---- the memory engine's functions ------------------------------------------------------ */

static eddy__mem_engine *eng;
static eddy__mem_conn *mconn;

static void mem_setup(void) {
    setup();
    char name[64];
    snprintf(name, sizeof(name), "store-core-%d", rand());
    eng = eddy__mem_engine_acquire(name);
    mconn = eddy__mem_conn_new(eng);
    cr_assert(eng && mconn);
}

static void mem_teardown(void) {
    eddy__falloc_fail_after(0, false);
    const char *bad = eddy__mem_engine_check(eng);
    cr_expect_null(bad, "engine invariant: %s", bad ? bad : "");
    eddy__mem_conn_free(mconn);
    eddy__mem_engine_release(eng);
    teardown();
}

TestSuite(store_memory, .init = mem_setup, .fini = mem_teardown);

static redisReply *mexec(const eddy__cmd *c) {
    long long block = -5;
    redisReply *r = eddy__mem_exec(mconn, c->argc, eddy__cmd_argv(c), c->argvlen, &block);
    return r;
}

/* Runs a command given as space-separated words ("" for an empty argument is written '').
 * Returns the reply rendered as text. */
static const char *mrun(const char *line) {
    static char out[512];
    eddy__cmd c;
    eddy__cmd_init(&c);
    char copy[2048];
    snprintf(copy, sizeof(copy), "%s", line);
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
        eddy__cmd_str(&c, strcmp(tok, "''") == 0 ? "" : tok);
    redisReply *r = mexec(&c);
    cr_assert(r, "no reply to %s", line);
    switch (r->type) {
    case REDIS_REPLY_INTEGER:
        snprintf(out, sizeof(out), ":%lld", r->integer);
        break;
    case REDIS_REPLY_ERROR:
        snprintf(out, sizeof(out), "-%s", r->str);
        break;
    case REDIS_REPLY_STATUS:
        snprintf(out, sizeof(out), "+%s", r->str);
        break;
    case REDIS_REPLY_STRING:
        snprintf(out, sizeof(out), "$%s", r->str);
        break;
    case REDIS_REPLY_NIL:
        snprintf(out, sizeof(out), "nil");
        break;
    default:
        snprintf(out, sizeof(out), "*%zu", r->elements);
    }
    freeReplyObject(r);
    eddy__cmd_reset(&c);
    return out;
}

static void load_library(void) {
    eddy__cmdlist l;
    eddy__cmdlist_init(&l);
    cr_assert_eq(eddy__library_load_cmds(&l), EDDY_OK);
    redisReply *r = mexec(&l.cmds[0]);
    cr_assert_eq(eddy__library_load_result(&l, 0, &r, NULL, NULL), EDDY_OK);
    freeReplyObject(r);
    eddy__cmdlist_reset(&l);
}

Test(store_memory, function_commands_answer_like_redis) {
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 0"), "-ERR Function not found");
    cr_expect_str_eq(mrun("FCALL"), "-ERR wrong number of arguments for 'fcall' command");
    cr_expect_str_eq(mrun("FUNCTION"), "-ERR wrong number of arguments for 'function' command");
    cr_expect_str_eq(mrun("FUNCTION nope"), "-ERR unknown subcommand 'nope'. Try FUNCTION HELP.");
    cr_expect_str_eq(mrun("FUNCTION LOAD"),
                     "-ERR wrong number of arguments for 'function|load' command");
    cr_expect_str_eq(mrun("FUNCTION LOAD garbage"), "-ERR Missing library metadata");
    cr_expect_str_eq(mrun("FUNCTION LOAD #!lua"), "-ERR Invalid library metadata");
    cr_expect_str_eq(mrun("FUNCTION LOAD x #!lua"), "-ERR Unknown option given: x");
    struct {
        const char *code;
        const char *want;
    } loads[] = {
        {"#!lua\nreturn 1", "-ERR Library name was not given"},
        {"#!lua name=a x=1\nreturn 1", "-ERR Invalid metadata value given: x=1"},
        {"#!lua name=a NAME=b\nreturn 1",
         "-ERR Invalid metadata value, name argument was given multiple times"},
        {"#!lua name=a-b\nreturn 1",
         "-ERR Library names can only contain letters, numbers, or underscores(_) and must be "
         "at least one character long"},
        {"#!js name=ab\nreturn 1", "-ERR Engine 'js' not found"},
        {"#! lua name=ab\nreturn 1", "-ERR Invalid metadata value given: lua"},
        {"#!LUA name=other_lib\nreturn 1", "$other_lib"},
        {"#!lua name=other_lib\nreturn 1", "-ERR Library 'other_lib' already exists"},
    };
    for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++) {
        eddy__cmd c;
        eddy__cmd_init(&c);
        eddy__cmd_str(&c, "FUNCTION");
        eddy__cmd_str(&c, "LOAD");
        eddy__cmd_str(&c, loads[i].code);
        redisReply *r = mexec(&c);
        cr_assert(r);
        char got[512];
        snprintf(got, sizeof(got), "%c%s", r->type == REDIS_REPLY_ERROR ? '-' : '$', r->str);
        cr_expect_str_eq(got, loads[i].want, "%s", loads[i].code);
        freeReplyObject(r);
        eddy__cmd_reset(&c);
    }
    /* A library the engine cannot run is remembered; its functions are unknown. */
    cr_expect_str_eq(mrun("FUNCTION DELETE OTHER_LIB"), "-ERR Library not found");
    cr_expect_str_eq(mrun("FUNCTION DELETE other_lib"), "+OK");
    cr_expect_str_eq(mrun("FUNCTION DELETE other_lib"), "-ERR Library not found");
    load_library();
    load_library(); /* REPLACE */
    char upper[64]; /* function names are not case-sensitive */
    for (size_t i = 0; i <= strlen(EDDY__STORE_APPEND_FN); i++)
        upper[i] = (char)toupper((unsigned char)EDDY__STORE_APPEND_FN[i]);
    char call[96];
    snprintf(call, sizeof(call), "FCALL %s x", upper);
    cr_expect_str_eq(mrun(call), "-ERR Bad number of keys provided");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 2 a"),
                     "-ERR Number of keys can't be greater than number of args");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " -1"),
                     "-ERR Number of keys can't be negative");
    cr_expect_str_eq(mrun("FUNCTION FLUSH x"),
                     "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
    cr_expect_str_eq(mrun("FUNCTION FLUSH a b"),
                     "-ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try "
                     "FUNCTION HELP.");
    cr_expect_str_eq(mrun("FUNCTION FLUSH async"), "+OK");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 0"), "-ERR Function not found");
    load_library();
    cr_expect_str_eq(mrun("FLUSHALL"), "+OK");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 0"),
                     "-ERR eddy_append: wrong number of keys", "FLUSHALL keeps functions");
    cr_expect_str_eq(mrun("FUNCTION FLUSH"), "+OK");
}

Test(store_memory, eddy_append_checks_before_writing) {
    load_library();
    struct {
        const char *cmd;
        const char *want;
    } cases[] = {
        {"FCALL " EDDY__STORE_APPEND_FN " 4 s a p x -1 o 1 2 f v '' 0",
         "-ERR eddy_append: wrong number of keys"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a s -1 o 1 2 f v '' 0",
         "-ERR eddy_append: keys must differ"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -2 o 1 2 f v '' 0",
         "-ERR eddy_append: bad expected version"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p", "-ERR eddy_append: bad expected version"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p 1234567890123456 o 1 2 f v '' 0",
         "-ERR eddy_append: bad expected version"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 '' 1 2 f v '' 0",
         "-ERR eddy_append: bad stream id"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 0 '' 0",
         "-ERR eddy_append: bad event count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o x 2 f v '' 0",
         "-ERR eddy_append: bad event count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 3 f v w '' 0",
         "-ERR eddy_append: bad field count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 0 '' 0",
         "-ERR eddy_append: bad field count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 4002 f v '' 0",
         "-ERR eddy_append: bad field count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 2 2 f v '' 0",
         "-ERR eddy_append: bad field count"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' 0 extra",
         "-ERR eddy_append: wrong number of arguments"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v subj 0",
         "-ERR eddy_append: publish subject and keys disagree"},
        {"FCALL " EDDY__STORE_APPEND_FN " 5 s a p x y -1 o 1 2 f v '' 0",
         "-ERR eddy_append: publish subject and keys disagree"},
        {"FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' -5",
         "-ERR eddy_append: bad maxlen"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_expect_str_eq(mrun(cases[i].cmd), cases[i].want, "%s", cases[i].cmd);
    cr_expect_str_eq(mrun("SET s x"), "+OK");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' 0"),
                     "-WRONGTYPE Operation against a key holding the wrong kind of value");
    cr_expect_str_eq(mrun("DEL s"), ":1");
    cr_expect_str_eq(mrun("SET p nope"), "+OK");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' 0"),
                     "-ERR eddy_append: position counter is not a count");
    cr_expect_str_eq(mrun("DEL p"), ":1");
    cr_expect_str_eq(mrun("XADD s 1000000000000000-0 f v"), "$1000000000000000-0");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' 0"),
                     "-ERR eddy_append: stream id out of range");
    cr_expect_str_eq(mrun("DEL s"), ":1");
    cr_expect_str_eq(mrun("XADD s 999999999999999-0 f v"), "$999999999999999-0");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f v '' 0"),
                     "-ERR eddy_append: version or position out of range");
    cr_expect_str_eq(mrun("DEL s"), ":1");
    cr_expect_str_eq(mrun("EXISTS s a p"), ":0", "nothing was written by any refusal");
}

Test(store_memory, eddy_append_writes_and_conflicts) {
    load_library();
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p 0 o 2 2 f 1 2 f 2 '' 0"), ":2");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p 0 o 1 2 f 3 '' 0"),
                     "-VERSIONCONFLICT 2");
    cr_expect_str_eq(
        mrun("FCALL " EDDY__STORE_APPEND_FN " 5 s2 a p subj subjects 2 o 1 2 f 3 x.y 0"),
        "-VERSIONCONFLICT 0");
    cr_expect_str_eq(mrun("EXISTS subj subjects s2"), ":0");
    cr_expect_str_eq(
        mrun("FCALL " EDDY__STORE_APPEND_FN " 5 s a p subj subjects 2 o 1 2 f 3 x.y 0"), ":3");
    cr_expect_str_eq(mrun("XLEN a"), ":3");
    cr_expect_str_eq(mrun("XLEN s"), ":3");
    cr_expect_str_eq(mrun("XLEN subj"), ":1");
    cr_expect_str_eq(mrun("GET p"), "$3");
    cr_expect_str_eq(mrun("SISMEMBER subjects x.y"), ":1");
    /* Positions continue above a counter that fell behind the store's stream. */
    cr_expect_str_eq(mrun("SET p 1"), "+OK");
    cr_expect_str_eq(mrun("XADD a 10-0 f v"), "$10-0");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f 4 '' 0"), ":4");
    cr_expect_str_eq(mrun("GET p"), "$11");
    /* A version stays above a deleted last entry. */
    cr_expect_str_eq(mrun("XDEL s 4-0"), ":1");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p 3 o 1 2 f 5 '' 0"),
                     "-VERSIONCONFLICT 4");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p 4 o 1 2 f 5 '' 0"), ":5");
    cr_expect_str_eq(mrun("PEXPIRE p 100000"), ":1");
    cr_expect_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p 5 o 1 2 f 6 '' 0"), ":6");
    cr_expect_str_eq(mrun("PTTL p"), ":-1", "the counter is SET, which drops a TTL");
}

/* Runs words as one command on the engine with its n-th allocation failing (0: none) and checks
 * the engine's invariants after it. NULL (with *block -1) when memory ran out. */
static redisReply *mexec_failing(const char *const *words, size_t nwords, long n,
                                 long long *block) {
    eddy__cmd c;
    eddy__cmd_init(&c);
    for (size_t i = 0; i < nwords; i++)
        eddy__cmd_str(&c, words[i]);
    eddy__falloc_fail_after(n, false);
    *block = -5;
    redisReply *r = eddy__mem_exec(mconn, c.argc, eddy__cmd_argv(&c), c.argvlen, block);
    eddy__falloc_fail_after(0, false);
    eddy__cmd_reset(&c);
    const char *bad = eddy__mem_engine_check(eng);
    cr_assert_null(bad, "allocation %ld: %s", n, bad ? bad : "");
    if (!r)
        cr_assert_eq(*block, -1, "out of memory is reported as such");
    return r;
}

/* Runs one publishing two-event append with the n-th allocation failing, and checks that the
 * engine either did all of it or nothing. Returns whether the allocation failure was hit. */
static bool append_under_oom(long n) {
    cr_assert_str_eq(mrun("FLUSHALL"), "+OK");
    /* Some state to keep: a previous append with its own subject. */
    cr_assert_str_eq(
        mrun("FCALL " EDDY__STORE_APPEND_FN " 5 s a p subj subjects -1 o 1 2 f 0 x.y 0"), ":1");
    const char *words[] = {"FCALL", EDDY__STORE_APPEND_FN,
                           "5",     "s",
                           "a",     "p",
                           "subj2", "subjects",
                           "1",     "o",
                           "2",     "4",
                           "f",     "1",
                           "g",     "x",
                           "2",     "f",
                           "2",     "a.b",
                           "1"};
    long long block;
    redisReply *r = mexec_failing(words, sizeof(words) / sizeof(words[0]), n, &block);
    bool applied = r != NULL;
    if (r) {
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "allocation %ld: %s", n, r->str);
        cr_assert_eq(r->integer, 3);
        freeReplyObject(r);
    }
    cr_assert_str_eq(mrun("XLEN a"), applied ? ":3" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("XLEN s"), applied ? ":3" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("EXISTS subj2"), applied ? ":1" : ":0", "allocation %ld", n);
    cr_assert_str_eq(mrun("SCARD subjects"), applied ? ":2" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("GET p"), applied ? "$3" : "$1", "allocation %ld", n);
    /* The engine goes on as if nothing happened. */
    cr_assert_str_eq(mrun("FCALL " EDDY__STORE_APPEND_FN " 3 s a p -1 o 1 2 f 9 '' 0"),
                     applied ? ":4" : ":2");
    cr_assert_str_eq(mrun("XREVRANGE a + - COUNT 1"), "*1");
    return !applied;
}

Test(store_memory, eddy_append_is_all_or_nothing_when_memory_runs_out) {
    load_library();
    unsigned long before = eddy__falloc_count();
    cr_assert_not(append_under_oom(0));
    long total = (long)(eddy__falloc_count() - before);
    cr_assert_gt(total, 10);
    int failed = 0;
    for (long n = 1; n <= total; n++)
        failed += append_under_oom(n);
    cr_expect_gt(failed, 5, "only %d failures hit the append", failed);
}

/* Many appends crossing the emulated listpack nodes (100 entries each) with a trim, and a
 * failed allocation in each of the next appends: the node bookkeeping an undo restores is what
 * the trim and the invariant check read. */
Test(store_memory, undo_restores_node_bookkeeping) {
    load_library();
    char want[32];
    int version = 0;
    for (int i = 0; i < 250; i++) {
        snprintf(want, sizeof(want), ":%d", ++version);
        cr_assert_str_eq(
            mrun("FCALL " EDDY__STORE_APPEND_FN " 5 s a p subj subjects -1 o 1 2 f v x.y 150"),
            want);
    }
    cr_assert_str_eq(mrun("XLEN subj"), ":150", "approximate trim drops whole nodes");
    for (long n = 1; n <= 40; n++) {
        eddy__falloc_fail_after(n, false);
        const char *cmd =
            "FCALL " EDDY__STORE_APPEND_FN " 5 s a p subj subjects -1 o 2 2 f v 2 f w x.y 150";
        eddy__cmd c;
        eddy__cmd_init(&c);
        char copy[256];
        snprintf(copy, sizeof(copy), "%s", cmd);
        for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
            eddy__cmd_str(&c, tok);
        long long block;
        redisReply *r = eddy__mem_exec(mconn, c.argc, eddy__cmd_argv(&c), c.argvlen, &block);
        eddy__falloc_fail_after(0, false);
        eddy__cmd_reset(&c);
        if (r) {
            version += 2;
            cr_assert_eq(r->integer, version);
            freeReplyObject(r);
        }
        const char *bad = eddy__mem_engine_check(eng);
        cr_assert_null(bad, "allocation %ld: %s", n, bad ? bad : "");
        snprintf(want, sizeof(want), ":%d", version);
        cr_assert_str_eq(mrun("XLEN a"), want, "allocation %ld", n);
        cr_assert_str_eq(mrun("XLEN s"), want, "allocation %ld", n);
    }
}

/* ---- publish_dedup_ms: the deduplicating publish and append ------------------------------ */

Test(store_memory, dedup_publish_answers_with_the_first_id) {
    load_library();
    const char *first = mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 e1 f v");
    char id[64];
    snprintf(id, sizeof(id), "%s", first);
    cr_assert(id[0] == '$' && strchr(id, '-'), "%s", id);
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 e1 f w"), id);
    cr_expect_str_eq(mrun("XLEN st"), ":1");
    cr_expect_str_eq(mrun("HGET di e1"), id);
    cr_expect_str_eq(mrun("ZCARD de"), ":1");
    const char *ttl = mrun("PTTL di");
    cr_expect(ttl[0] == ':' && atol(ttl + 1) > 0 && atol(ttl + 1) <= 60000, "%s", ttl);
    ttl = mrun("PTTL de");
    cr_expect(ttl[0] == ':' && atol(ttl + 1) > 0 && atol(ttl + 1) <= 60000, "%s", ttl);
    cr_expect_str_neq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 e2 f v"), id);
    cr_expect_str_eq(mrun("XLEN st"), ":2", "another id is another entry");
    cr_expect_str_eq(mrun("HLEN di"), ":2", "one record for the subject: two fields, no new key");
    cr_expect_str_eq(mrun("EXISTS e1 e2"), ":0");
}

Test(store_memory, dedup_publish_prunes_what_expired) {
    load_library();
    /* Two ids whose time passed long ago (as the record would hold them after the window) and
     * one still inside it: the next publish forgets the first two, not the third. */
    cr_assert_str_eq(mrun("HSET di old1 1-1 old2 1-2 live 1-3"), ":3");
    cr_assert_str_eq(mrun("ZADD de 1 old1 2 old2 99999999999999 live"), ":3");
    cr_assert_str_eq(mrun("XADD st 1-1 f v"), "$1-1");
    const char *r = mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 old1 f v");
    cr_expect_str_neq(r, "$1-1", "an id past its time is published again");
    cr_expect_str_eq(mrun("XLEN st"), ":2");
    cr_expect_str_eq(mrun("HGET di old2"), "nil");
    cr_expect_str_eq(mrun("ZSCORE de old2"), "nil");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 live f v"), "$1-3");
    cr_expect_str_eq(mrun("HLEN di"), ":2", "live and the new old1");
}

Test(store_memory, dedup_publish_checks_its_arguments) {
    load_library();
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 2 st di 60000 0 e1 f v"),
                     "-ERR eddy_publish: wrong number of keys");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 0 0 e1 f v"),
                     "-ERR eddy_publish: bad dedup window");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 x e1 f v"),
                     "-ERR eddy_publish: bad maxlen");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 e1 f"),
                     "-ERR eddy_publish: wrong number of arguments");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 '' f v"),
                     "-ERR eddy_publish: bad event id");
    cr_assert_str_eq(mrun("SET di x"), "+OK");
    cr_expect_str_eq(mrun("FCALL " EDDY__PUBLISH_FN " 3 st di de 60000 0 e1 f v"),
                     "-WRONGTYPE Operation against a key holding the wrong kind of value");
    cr_expect_str_eq(mrun("EXISTS st"), ":0");
}

/* One deduplicated publish with the n-th allocation failing: all of it or nothing. Returns
 * whether the failure hit it. */
static bool dedup_publish_under_oom(long n) {
    cr_assert_str_eq(mrun("FLUSHALL"), "+OK");
    cr_assert_str_eq(mrun("XADD st 1-1 f v"), "$1-1");
    const char *words[] = {
        "FCALL", EDDY__PUBLISH_FN, "3", "st", "di", "de", "60000", "5", "e1", "f", "v"};
    long long block;
    redisReply *r = mexec_failing(words, sizeof(words) / sizeof(words[0]), n, &block);
    bool applied = r != NULL;
    if (r) {
        cr_assert_eq(r->type, REDIS_REPLY_STRING, "allocation %ld: %s", n, r->str);
        freeReplyObject(r);
    }
    cr_assert_str_eq(mrun("XLEN st"), applied ? ":2" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("EXISTS di de"), applied ? ":2" : ":0", "allocation %ld", n);
    return !applied;
}

Test(store_memory, dedup_publish_is_all_or_nothing_when_memory_runs_out) {
    load_library();
    unsigned long before = eddy__falloc_count();
    cr_assert_not(dedup_publish_under_oom(0));
    long total = (long)(eddy__falloc_count() - before);
    int failed = 0;
    for (long n = 1; n <= total; n++)
        failed += dedup_publish_under_oom(n);
    cr_expect_gt(failed, 3, "only %d failures hit the publish", failed);
}

/* A deduplicated two-event append with publish, with the n-th allocation failing. */
static bool dedup_append_under_oom(long n) {
    cr_assert_str_eq(mrun("FLUSHALL"), "+OK");
    cr_assert_str_eq(mrun("FCALL " EDDY__STORE_APPEND_DEDUP_FN
                          " 7 s a p subj subjects di de -1 o 1 2 f 0 x.y 0 "
                          "60000 d0"),
                     ":1");
    const char *words[] = {"FCALL", EDDY__STORE_APPEND_DEDUP_FN,
                           "7",     "s",
                           "a",     "p",
                           "subj",  "subjects",
                           "di",    "de",
                           "1",     "o",
                           "2",     "4",
                           "f",     "1",
                           "g",     "x",
                           "2",     "f",
                           "2",     "x.y",
                           "0",     "60000",
                           "d1",    "d2"};
    size_t nwords = sizeof(words) / sizeof(words[0]);
    long long block;
    redisReply *r = mexec_failing(words, nwords, n, &block);
    bool applied = r != NULL;
    if (r) {
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "allocation %ld: %s", n, r->str);
        cr_assert_eq(r->integer, 3);
        freeReplyObject(r);
    }
    cr_assert_str_eq(mrun("XLEN s"), applied ? ":3" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("XLEN subj"), applied ? ":3" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("HLEN di"), applied ? ":3" : ":1", "allocation %ld", n);
    cr_assert_str_eq(mrun("ZCARD de"), applied ? ":3" : ":1", "allocation %ld", n);
    if (applied) {
        /* The repeat: the first outcome, nothing written. */
        r = mexec_failing(words, nwords, 0, &block);
        cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 3);
        freeReplyObject(r);
        cr_assert_str_eq(mrun("XLEN s"), ":3");
    }
    return !applied;
}

Test(store_memory, dedup_append_is_all_or_nothing_when_memory_runs_out) {
    load_library();
    unsigned long before = eddy__falloc_count();
    cr_assert_not(dedup_append_under_oom(0));
    long total = (long)(eddy__falloc_count() - before);
    int failed = 0;
    for (long n = 1; n <= total; n++)
        failed += dedup_append_under_oom(n);
    cr_expect_gt(failed, 5, "only %d failures hit the append", failed);
}

/* ---- the transactional handler's commit: all or nothing ---------------------------------- */

/* Everything the commit's keys hold, as text (but pending entries' idle times): the input's
 * stream, its group and the group's pending entries, the subject set, and each output stream (its bookkeeping and its entries). */
static void commit_state(char *out, size_t size, bool mask) {
    static const char *const probes[] = {
        "EXISTS in o0 o1 o2 subjects",
        "XPENDING in g",
        "XINFO GROUPS in",
        "XINFO STREAM in",
        "SMEMBERS subjects",
        "XINFO STREAM o0",
        "XRANGE o0 - +",
        "XINFO STREAM o1",
        "XRANGE o1 - +",
        "XINFO STREAM o2",
        "XRANGE o2 - +",
    };
    out[0] = '\0';
    for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
        eddy__cmd c;
        eddy__cmd_init(&c);
        char copy[128];
        snprintf(copy, sizeof(copy), "%s", probes[i]);
        for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " "))
            eddy__cmd_str(&c, tok);
        redisReply *r = mexec(&c);
        eddy__cmd_reset(&c);
        cr_assert(r, "%s", probes[i]);
        size_t n = strlen(out);
        snprintf(out + n, size - n, "%s: ", probes[i]);
        raw_render(out, size, r, mask);
        freeReplyObject(r);
        n = strlen(out);
        snprintf(out + n, size - n, "\n");
    }
    cr_assert_lt(strlen(out), size - 1, "the state was cut short");
}

/* The state a commit starts from: the input 1-1 (and 1-2) pending in group g; o0 an output
 * stream with 250 entries (three emulated nodes, so a bound of 150 trims), o1 and o2 missing;
 * with `set`, the subject set holding "old". */
static void commit_setup(bool set) {
    cr_assert_str_eq(mrun("FLUSHALL"), "+OK");
    cr_assert_str_eq(mrun("XADD in 1-1 f v"), "$1-1");
    cr_assert_str_eq(mrun("XADD in 1-2 f v"), "$1-2");
    cr_assert_str_eq(mrun("XGROUP CREATE in g 0"), "+OK");
    cr_assert_str_eq(mrun("XREADGROUP GROUP g me COUNT 2 STREAMS in >"), "*1");
    for (int i = 1; i <= 250; i++) {
        char cmd[64];
        snprintf(cmd, sizeof(cmd), "XADD o0 1-%d f %d", i, i);
        cr_assert_str_neq(mrun(cmd), "nil");
    }
    if (set)
        cr_assert_str_eq(mrun("SADD subjects old"), ":1");
}

/* The commit of input 1-1 with nout outputs: output i to o<i % 3> (o0 more than once from four
 * on) with subject a<i % 2>, or "old" for the third; a bound of 150 (which trims o0) when
 * `bound`. */
static size_t commit_words(const char **words, char (*bufs)[16], int nout, bool bound) {
    size_t n = 0;
    words[n++] = "FCALL";
    words[n++] = EDDY__COMMIT_FN;
    snprintf(bufs[0], sizeof(bufs[0]), "%d", nout + 2);
    words[n++] = bufs[0];
    words[n++] = "in";
    words[n++] = "subjects";
    static const char *const streams[] = {"o0", "o1", "o2"};
    for (int i = 0; i < nout; i++)
        words[n++] = streams[i % 3];
    words[n++] = "g";
    words[n++] = "1-1";
    words[n++] = bound ? "150" : "0";
    snprintf(bufs[1], sizeof(bufs[1]), "%d", nout);
    words[n++] = bufs[1];
    for (int i = 0; i < nout; i++) {
        words[n++] = i == 2 ? "old" : i % 2 ? "a1" : "a0";
        words[n++] = i == 1 ? "4" : "2";
        words[n++] = "f";
        words[n++] = "x";
        if (i == 1) {
            words[n++] = "g";
            words[n++] = "y";
        }
    }
    return n;
}

enum { COMMIT_STATE = 16384 };

/* Runs the commit with 1..nout outputs failing each allocation in turn until it succeeds:
 * each failure (the engine's out-of-memory) leaves every key exactly as it was, the input
 * pending; the success leaves what a run without failures does. */
static void commit_under_oom(int nout, bool set, bool bound) {
    const char *words[64];
    char bufs[2][16];
    size_t nwords = commit_words(words, bufs, nout, bound);
    static char want[COMMIT_STATE], before[COMMIT_STATE], after[COMMIT_STATE];
    long long block;
    /* the run without failures */
    commit_setup(set);
    redisReply *r = mexec_failing(words, nwords, 0, &block);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1, "%d outputs", nout);
    freeReplyObject(r);
    commit_state(want, sizeof(want), true);
    cr_assert_str_eq(mrun("XPENDING in g - + 10"), "*1", "the input is acknowledged");
    if (bound)
        cr_assert_str_lt(mrun("XLEN o0"), ":250", "the bound trimmed o0");
    int failures = 0;
    for (long n = 1;; n++) {
        cr_assert_lt(n, 100000, "the commit never succeeded");
        commit_setup(set);
        commit_state(before, sizeof(before), false);
        r = mexec_failing(words, nwords, n, &block);
        if (r) {
            cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer == 1,
                      "%d outputs, allocation %ld: %s", nout, n, r->str ? r->str : "");
            freeReplyObject(r);
            commit_state(after, sizeof(after), true);
            cr_assert_str_eq(after, want,
                             "%d outputs, allocation %ld: not what a run without "
                             "failures left",
                             nout, n);
            break;
        }
        failures++;
        commit_state(after, sizeof(after), false);
        cr_assert_str_eq(after, before, "%d outputs, allocation %ld failed: the keys changed", nout,
                         n);
        cr_assert_str_eq(mrun("XPENDING in g 1-1 1-1 1"), "*1",
                         "%d outputs, allocation %ld failed: the input is not pending", nout, n);
    }
    cr_expect_gt(failures, nout, "only %d failures hit the commit", failures);
    /* A redelivered input commits once. */
    r = mexec_failing(words, nwords, 0, &block);
    cr_assert(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
    freeReplyObject(r);
}

Test(store_memory, commit_is_all_or_nothing_when_memory_runs_out) {
    load_library();
    for (int nout = 1; nout <= 4; nout++) {
        commit_under_oom(nout, true, false);
        commit_under_oom(nout, false, true);
    }
}

/* A commit that fails midway for another reason (an output's stream at the subject set's key,
 * which an earlier output's subject created) leaves nothing either. */
Test(store_memory, commit_undoes_what_it_wrote_when_an_output_fails) {
    load_library();
    commit_setup(false);
    cr_assert_str_eq(mrun("FCALL " EDDY__COMMIT_FN " 4 in subjects o1 subjects g 1-1 0 2 a 2 f "
                          "x b 2 f y"),
                     "-WRONGTYPE Operation against a key holding the wrong kind of value");
    cr_expect_str_eq(mrun("EXISTS o1 subjects"), ":0");
    cr_expect_str_eq(mrun("XPENDING in g 1-1 1-1 1"), "*1");
    /* An output stream whose ids ran out: the outputs before it are taken back. */
    cr_assert_str_eq(mrun("XADD o2 18446744073709551615-18446744073709551615 f v"),
                     "$18446744073709551615-18446744073709551615");
    cr_assert_str_eq(mrun("SADD subjects old"), ":1");
    cr_assert_str_eq(
        mrun("FCALL " EDDY__COMMIT_FN " 5 in subjects o0 o1 o2 g 1-1 0 3 a 2 f x old 2 f y b 2 "
             "f z"),
        "-ERR The stream has exhausted the last possible ID, unable to add more items");
    cr_expect_str_eq(mrun("XLEN o0"), ":250");
    cr_expect_str_eq(mrun("EXISTS o1"), ":0");
    cr_expect_str_eq(mrun("XLEN o2"), ":1");
    cr_expect_str_eq(mrun("SCARD subjects"), ":1");
    cr_expect_str_eq(mrun("SISMEMBER subjects a"), ":0");
    cr_expect_str_eq(mrun("XPENDING in g 1-1 1-1 1"), "*1");
}

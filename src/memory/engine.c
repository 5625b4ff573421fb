/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory engine's front door: command table and dispatch, per-connection MULTI/EXEC,
 * the engine lock, the write sequence, the parked connections a write wakes (through their
 * eventfds), and the bookkeeping that lets a blocking XREAD be re-run.
 *
 * Invariants:
 * - Every command runs entirely under engine->mu, with one time snapshot; EXEC runs all its
 *   queued commands under one hold of the lock and one snapshot, so they are atomic.
 * - Rejections Redis makes before running a command (unknown command, arity, unknown
 *   subcommand) are made here, before the lock, and inside MULTI they doom the transaction.
 * - seq increases after every command that changed data, before the lock is released.
 * - A connection parked by eddy__mem_conn_park is linked in engine->conn_waiters (under mu)
 *   and woken through its eventfd by the writes that can serve its blocked read: an XADD to
 *   one of its keys (the stream's wseq), or any write that is neither an XADD nor quiet
 *   (other_seq); it checks both against `seen` before parking, so no such write is missed.
 * - A reply is written as records in conn->out under the lock and turned into its redisReply
 *   tree after the lock is released (the tree's allocations happen outside it). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memory/function.h"
#include "memory/internal.h"

/* ---- command table ------------------------------------------------------------------------ */

typedef struct cmd_def {
    const char *name;
    int arity; /* Redis's convention: n exactly, or -n for at least n (name included) */
    eddy__mcmd_fn fn;
    const struct cmd_def *subs; /* container commands (XGROUP, XINFO) */
    const char *fullname;
} cmd_def;

static void cmd_multi_marker(eddy__mctx *c) { (void)c; }
static void cmd_exec_marker(eddy__mctx *c) { (void)c; }
static void cmd_discard_marker(eddy__mctx *c) { (void)c; }

static const cmd_def xgroup_subs[] = {
    {"create", -5, eddy__mcmd_xgroup_create, NULL, "xgroup|create"},
    {"setid", -5, eddy__mcmd_xgroup_setid, NULL, "xgroup|setid"},
    {"destroy", 4, eddy__mcmd_xgroup_destroy, NULL, "xgroup|destroy"},
    {"createconsumer", 5, eddy__mcmd_xgroup_createconsumer, NULL, "xgroup|createconsumer"},
    {"delconsumer", 5, eddy__mcmd_xgroup_delconsumer, NULL, "xgroup|delconsumer"},
    {"help", 2, eddy__mcmd_xgroup_help, NULL, "xgroup|help"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cmd_def xinfo_subs[] = {
    {"stream", -3, eddy__mcmd_xinfo_stream, NULL, "xinfo|stream"},
    {"groups", 3, eddy__mcmd_xinfo_groups, NULL, "xinfo|groups"},
    {"consumers", 4, eddy__mcmd_xinfo_consumers, NULL, "xinfo|consumers"},
    {"help", 2, eddy__mcmd_xinfo_help, NULL, "xinfo|help"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cmd_def function_subs[] = {
    {"load", -3, eddy__mcmd_function_load, NULL, "function|load"},
    {"delete", 3, eddy__mcmd_function_delete, NULL, "function|delete"},
    {"flush", -2, eddy__mcmd_function_flush, NULL, "function|flush"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cmd_def commands[] = {
    /* A lookup walks the table: the commands of every publish and read come first. */
    {"xadd", -5, eddy__mcmd_xadd, NULL, "xadd"},
    {"xreadgroup", -7, eddy__mcmd_xreadgroup, NULL, "xreadgroup"},
    {"xack", -4, eddy__mcmd_xack, NULL, "xack"},
    {"fcall", -3, eddy__mcmd_fcall, NULL, "fcall"},
    {"ping", -1, eddy__mcmd_ping, NULL, "ping"},
    {"time", 1, eddy__mcmd_time, NULL, "time"},
    {"del", -2, eddy__mcmd_del, NULL, "del"},
    {"exists", -2, eddy__mcmd_exists, NULL, "exists"},
    {"type", 2, eddy__mcmd_type, NULL, "type"},
    {"expire", -3, eddy__mcmd_expire, NULL, "expire"},
    {"pexpire", -3, eddy__mcmd_pexpire, NULL, "pexpire"},
    {"ttl", 2, eddy__mcmd_ttl, NULL, "ttl"},
    {"pttl", 2, eddy__mcmd_pttl, NULL, "pttl"},
    {"persist", 2, eddy__mcmd_persist, NULL, "persist"},
    {"flushall", -1, eddy__mcmd_flushall, NULL, "flushall"},
    {"get", 2, eddy__mcmd_get, NULL, "get"},
    {"set", -3, eddy__mcmd_set, NULL, "set"},
    {"incr", 2, eddy__mcmd_incr, NULL, "incr"},
    {"incrby", 3, eddy__mcmd_incrby, NULL, "incrby"},
    {"sadd", -3, eddy__mcmd_sadd, NULL, "sadd"},
    {"srem", -3, eddy__mcmd_srem, NULL, "srem"},
    {"smembers", 2, eddy__mcmd_smembers, NULL, "smembers"},
    {"sismember", 3, eddy__mcmd_sismember, NULL, "sismember"},
    {"scard", 2, eddy__mcmd_scard, NULL, "scard"},
    {"hset", -4, eddy__mcmd_hset, NULL, "hset"},
    {"hget", 3, eddy__mcmd_hget, NULL, "hget"},
    {"hdel", -3, eddy__mcmd_hdel, NULL, "hdel"},
    {"hgetall", 2, eddy__mcmd_hgetall, NULL, "hgetall"},
    {"hlen", 2, eddy__mcmd_hlen, NULL, "hlen"},
    {"zadd", -4, eddy__mcmd_zadd, NULL, "zadd"},
    {"zrem", -3, eddy__mcmd_zrem, NULL, "zrem"},
    {"zrangebyscore", -4, eddy__mcmd_zrangebyscore, NULL, "zrangebyscore"},
    {"zremrangebyscore", 4, eddy__mcmd_zremrangebyscore, NULL, "zremrangebyscore"},
    {"zscore", 3, eddy__mcmd_zscore, NULL, "zscore"},
    {"zcard", 2, eddy__mcmd_zcard, NULL, "zcard"},
    {"xlen", 2, eddy__mcmd_xlen, NULL, "xlen"},
    {"xrange", -4, eddy__mcmd_xrange, NULL, "xrange"},
    {"xrevrange", -4, eddy__mcmd_xrevrange, NULL, "xrevrange"},
    {"xdel", -3, eddy__mcmd_xdel, NULL, "xdel"},
    {"xtrim", -4, eddy__mcmd_xtrim, NULL, "xtrim"},
    {"xread", -4, eddy__mcmd_xread, NULL, "xread"},
    {"xpending", -3, eddy__mcmd_xpending, NULL, "xpending"},
    {"xclaim", -6, eddy__mcmd_xclaim, NULL, "xclaim"},
    {"xautoclaim", -6, eddy__mcmd_xautoclaim, NULL, "xautoclaim"},
    {"xgroup", -2, NULL, xgroup_subs, "xgroup"},
    {"xinfo", -2, NULL, xinfo_subs, "xinfo"},
    {"function", -2, NULL, function_subs, "function"},
    {"multi", 1, cmd_multi_marker, NULL, "multi"},
    {"exec", 1, cmd_exec_marker, NULL, "exec"},
    {"discard", 1, cmd_discard_marker, NULL, "discard"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cmd_def *lookup(const cmd_def *table, const char *name, size_t len) {
    if (len == 0)
        return NULL;
    /* The names are lowercase letters: a first byte that differs even in ASCII case is no
     * match, which spares the full comparison for nearly every row. */
    char first = (char)(name[0] | 0x20);
    for (const cmd_def *d = table; d->name; d++)
        if (d->name[0] == first && eddy__marg_is(name, len, d->name))
            return d;
    return NULL;
}

static bool arity_ok(int arity, int argc) { return arity > 0 ? argc == arity : argc >= -arity; }

/* ---- context helpers ---------------------------------------------------------------------- */

void eddy__mctx_error(eddy__mctx *c, const char *text) {
    eddy__mresp_truncate(c->out, c->mark);
    eddy__mresp_error(c->out, text);
}

void eddy__mctx_errorf(eddy__mctx *c, const char *fmt, ...) {
    eddy__mresp_truncate(c->out, c->mark);
    va_list ap;
    va_start(ap, fmt);
    eddy__mresp_verrorf(c->out, fmt, ap);
    va_end(ap);
}

void eddy__mctx_oom(eddy__mctx *c) { c->oom = true; }

void eddy__mctx_err_syntax(eddy__mctx *c) { eddy__mctx_error(c, "ERR syntax error"); }

void eddy__mctx_err_wrongtype(eddy__mctx *c) {
    eddy__mctx_error(c, "WRONGTYPE Operation against a key holding the wrong kind of value");
}

void eddy__mctx_err_notint(eddy__mctx *c) {
    eddy__mctx_error(c, "ERR value is not an integer or out of range");
}

void eddy__mctx_err_arity(eddy__mctx *c, const char *fullname) {
    eddy__mctx_errorf(c, "ERR wrong number of arguments for '%s' command", fullname);
}

bool eddy__mctx_ll(eddy__mctx *c, int i, long long *out, const char *msg) {
    if (eddy__mparse_ll(ARG(c, i), ARGLEN(c, i), out))
        return true;
    if (msg)
        eddy__mctx_errorf(c, "ERR %s", msg);
    else
        eddy__mctx_err_notint(c);
    return false;
}

int eddy__mname_len(const char *s, size_t len) {
    const char *nul = memchr(s, '\0', len);
    size_t n = nul ? (size_t)(nul - s) : len;
    return n > INT_MAX ? INT_MAX : (int)n;
}

/* ---- time --------------------------------------------------------------------------------- */

static long long realtime_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- engine lifecycle --------------------------------------------------------------------- */

eddy__mem_engine *eddy__mem_engine_new(const char *name) {
    eddy__mem_engine *e = eddy__mem_calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->name = eddy__mem_memdup(name, strlen(name));
    if (!e->name) {
        eddy__mem_free(e);
        return NULL;
    }
    pthread_mutex_init(&e->mu, NULL);
    eddy__mdict_init(&e->keys);
    eddy__mskl_init(&e->expires, eddy__mkey_expire_cmp);
    return e;
}

void eddy__mem_engine_destroy(eddy__mem_engine *e) {
    if (!e)
        return;
    eddy__mkey_flush(e);
    eddy__mfunctions_free(e);
    eddy__mskl_clear(&e->expires, NULL);
    pthread_mutex_destroy(&e->mu);
    eddy__mem_free(e->name);
    eddy__mem_free(e);
}

uint64_t eddy__mem_engine_seq(eddy__mem_engine *e) {
    return atomic_load_explicit(&e->seq, memory_order_acquire);
}

/* Does a write since `seen` concern what conn's blocked read waits on? Under mu. */
static bool conn_should_wake(const eddy__mem_conn *conn, uint64_t seen) {
    eddy__mem_engine *e = conn->engine;
    if (e->other_seq > seen || conn->wait_nkeys < 0)
        return e->seq != seen;
    const char *p = conn->wait_keys;
    for (int i = 0; i < conn->wait_nkeys; i++) {
        size_t len;
        memcpy(&len, p, sizeof(len));
        p += sizeof(len);
        eddy__mdict_entry *d = eddy__mdict_find(&e->keys, p, len);
        const eddy__mobj *o = d ? d->val : NULL;
        if (o && o->type == EDDY__MT_STREAM && o->v.stream->wseq > seen)
            return true;
        p += len;
    }
    return false;
}

static bool conn_waits_on(const eddy__mem_conn *conn, const char *key, size_t klen) {
    if (conn->wait_nkeys < 0)
        return true;
    const char *p = conn->wait_keys;
    for (int i = 0; i < conn->wait_nkeys; i++) {
        size_t len;
        memcpy(&len, p, sizeof(len));
        p += sizeof(len);
        if (len == klen && memcmp(p, key, len) == 0)
            return true;
        p += len;
    }
    return false;
}

/* Out of line, so that wake_conns stays small enough to inline into every write. */
static __attribute__((noinline)) void signal_parked(const eddy__mem_conn *w) {
    uint64_t one = 1;
    ssize_t k = write(w->wake_fd, &one, sizeof(one));
    (void)k; /* EAGAIN: the counter is already set, which is all a wake is */
}

/* Wakes the parked connections a write concerns (appended: the stream an XADD added to, or
 * NULL for every one) through their eventfd, once until they park again. Under mu: a
 * connection unparks under it before its memory (or its fd) can go. */
static void wake_conns(eddy__mem_engine *e, const eddy__mobj *appended) {
    for (eddy__mem_conn *w = e->conn_waiters; w; w = w->wait_next) {
        if (w->woken || (appended && !conn_waits_on(w, appended->key, appended->klen)))
            continue;
        w->woken = true;
        signal_parked(w);
    }
}

static void link_waiter(eddy__mem_engine *e, eddy__mem_conn *conn) {
    conn->woken = false;
    conn->wait_prev = NULL;
    conn->wait_next = e->conn_waiters;
    if (e->conn_waiters)
        e->conn_waiters->wait_prev = conn;
    e->conn_waiters = conn;
}

static void unlink_waiter(eddy__mem_engine *e, eddy__mem_conn *conn) {
    if (conn->wait_prev)
        conn->wait_prev->wait_next = conn->wait_next;
    else
        e->conn_waiters = conn->wait_next;
    if (conn->wait_next)
        conn->wait_next->wait_prev = conn->wait_prev;
}

bool eddy__mem_conn_park(eddy__mem_conn *conn, int fd) {
    eddy__mem_engine *e = conn->engine;
    pthread_mutex_lock(&e->mu);
    bool park = !conn->parked && !conn_should_wake(conn, conn->blocked_seq);
    if (park) {
        link_waiter(e, conn);
        conn->parked = true;
        conn->wake_fd = fd;
    }
    pthread_mutex_unlock(&e->mu);
    return park;
}

void eddy__mem_conn_unpark(eddy__mem_conn *conn) {
    eddy__mem_engine *e = conn->engine;
    pthread_mutex_lock(&e->mu);
    if (conn->parked) {
        unlink_waiter(e, conn);
        conn->parked = false;
        conn->wake_fd = -1;
    }
    pthread_mutex_unlock(&e->mu);
}

/* ---- connections -------------------------------------------------------------------------- */

eddy__mem_conn *eddy__mem_conn_new(eddy__mem_engine *engine) {
    eddy__mem_conn *conn = eddy__mem_calloc(1, sizeof(*conn));
    if (!conn)
        return NULL;
    conn->engine = engine;
    conn->wait_nkeys = -1;
    conn->wake_fd = -1;
    eddy__mresp_init(&conn->out);
    return conn;
}

static void free_queued(eddy__mqueued *q) {
    for (int i = 0; i < q->argc; i++)
        eddy__mem_free(q->argv[i]);
    eddy__mem_free(q->argv);
    eddy__mem_free(q->argvlen);
}

static void discard_queue(eddy__mem_conn *conn) {
    for (size_t i = 0; i < conn->nqueue; i++)
        free_queued(&conn->queue[i]);
    eddy__mem_free(conn->queue);
    conn->queue = NULL;
    conn->nqueue = conn->qcap = 0;
    conn->in_multi = false;
    conn->multi_failed = false;
}

void eddy__mconn_unblock(eddy__mem_conn *conn) {
    eddy__mem_free(conn->blocked_cmd);
    eddy__mem_free(conn->blocked_ids);
    conn->blocked_cmd = NULL;
    conn->blocked_ids = NULL;
    conn->blocked_len = 0;
    conn->blocked_nids = 0;
}

void eddy__mem_conn_free(eddy__mem_conn *conn) {
    if (!conn)
        return;
    eddy__mem_conn_unpark(conn);
    discard_queue(conn);
    eddy__mconn_unblock(conn);
    eddy__mresp_release(&conn->out);
    eddy__mem_free(conn->wait_keys);
    eddy__mem_free(conn);
}

void eddy__mconn_wait_on(eddy__mctx *c, int first, int nkeys) {
    eddy__mem_conn *conn = c->conn;
    size_t size = 0;
    for (int i = 0; i < nkeys; i++)
        size += sizeof(size_t) + ARGLEN(c, first + i);
    conn->wait_nkeys = -1;
    if (size > conn->wait_keys_cap) {
        char *keys = eddy__mem_realloc(conn->wait_keys, size);
        if (!keys)
            return; /* no list: any write wakes it, which is only slower */
        conn->wait_keys = keys;
        conn->wait_keys_cap = size;
    }
    char *p = conn->wait_keys;
    for (int i = 0; i < nkeys; i++) {
        size_t len = ARGLEN(c, first + i);
        memcpy(p, &len, sizeof(len));
        memcpy(p + sizeof(len), ARG(c, first + i), len);
        p += sizeof(len) + len;
    }
    conn->wait_nkeys = nkeys;
}

eddy__mem_engine *eddy__mem_conn_engine(eddy__mem_conn *conn) { return conn->engine; }

/* The command flattened as (length, bytes) pairs, for recognising a re-run. */
static size_t flat_size(const eddy__mctx *c) {
    size_t n = 0;
    for (int i = 0; i < c->argc; i++)
        n += sizeof(size_t) + c->argvlen[i];
    return n;
}

bool eddy__mconn_blocked_match(eddy__mctx *c, const eddy__mid **ids, int *nids) {
    eddy__mem_conn *conn = c->conn;
    if (!conn->blocked_cmd || conn->blocked_len != flat_size(c))
        return false;
    const char *p = conn->blocked_cmd;
    for (int i = 0; i < c->argc; i++) {
        size_t len;
        memcpy(&len, p, sizeof(len));
        p += sizeof(len);
        if (len != c->argvlen[i] || memcmp(p, c->argv[i], len) != 0)
            return false;
        p += len;
    }
    *ids = conn->blocked_ids;
    *nids = conn->blocked_nids;
    return true;
}

bool eddy__mconn_block(eddy__mctx *c, const eddy__mid *ids, int nids) {
    size_t size = flat_size(c);
    char *flat = eddy__mem_malloc(size);
    eddy__mid *copy = eddy__mem_malloc(sizeof(*copy) * (size_t)(nids > 0 ? nids : 1));
    if (!flat || !copy) {
        eddy__mem_free(flat);
        eddy__mem_free(copy);
        return false;
    }
    char *p = flat;
    for (int i = 0; i < c->argc; i++) {
        memcpy(p, &c->argvlen[i], sizeof(size_t));
        p += sizeof(size_t);
        memcpy(p, c->argv[i], c->argvlen[i]);
        p += c->argvlen[i];
    }
    if (nids > 0)
        memcpy(copy, ids, sizeof(*copy) * (size_t)nids);
    eddy__mconn_unblock(c->conn);
    c->conn->blocked_cmd = flat;
    c->conn->blocked_len = size;
    c->conn->blocked_ids = copy;
    c->conn->blocked_nids = nids;
    return true;
}

/* ---- execution ---------------------------------------------------------------------------- */

/* Resolves the command and checks what Redis checks before running it. Returns the handler's
 * definition, or NULL after writing the rejection. */
static const cmd_def *resolve(eddy__mctx *c) {
    const cmd_def *d = lookup(commands, ARG(c, 0), ARGLEN(c, 0));
    if (!d) {
        /* Redis: "unknown command '%.128s', with args beginning with: " then "'%.*s' " per
         * argument while the list is shorter than 128 bytes. */
        char args[512];
        size_t alen = 0;
        args[0] = '\0';
        for (int i = 1; i < c->argc && alen < 128; i++) {
            int room = 128 - (int)alen;
            int n = eddy__mname_len(ARG(c, i), ARGLEN(c, i));
            int w = snprintf(args + alen, sizeof(args) - alen, "'%.*s' ", n < room ? n : room,
                             ARG(c, i));
            if (w > 0)
                alen += (size_t)w;
        }
        eddy__mctx_errorf(c, "ERR unknown command '%.*s', with args beginning with: %s",
                          eddy__mname_len(ARG(c, 0), ARGLEN(c, 0) > 128 ? 128 : ARGLEN(c, 0)),
                          ARG(c, 0), args);
        return NULL;
    }
    if (!arity_ok(d->arity, c->argc)) {
        if (d->fn == cmd_exec_marker) {
            /* Redis rejects a malformed EXEC by aborting the transaction, in MULTI or not. */
            discard_queue(c->conn);
            eddy__mctx_errorf(c,
                              "EXECABORT Transaction discarded because of: wrong number of "
                              "arguments for '%s' command",
                              d->fullname);
            return NULL;
        }
        eddy__mctx_err_arity(c, d->fullname);
        return NULL;
    }
    if (d->subs) {
        const cmd_def *sub = lookup(d->subs, ARG(c, 1), ARGLEN(c, 1));
        if (!sub) {
            size_t n = ARGLEN(c, 1) > 128 ? 128 : ARGLEN(c, 1);
            eddy__mctx_errorf(c, "ERR unknown subcommand '%.*s'. Try %s HELP.",
                              eddy__mname_len(ARG(c, 1), n), ARG(c, 1),
                              d->subs == xgroup_subs  ? "XGROUP"
                              : d->subs == xinfo_subs ? "XINFO"
                                                      : "FUNCTION");
            return NULL;
        }
        if (!arity_ok(sub->arity, c->argc)) {
            eddy__mctx_err_arity(c, sub->fullname);
            return NULL;
        }
        return sub;
    }
    return d;
}

static bool queue_command(eddy__mctx *c) {
    eddy__mem_conn *conn = c->conn;
    if (conn->nqueue == conn->qcap) {
        size_t cap = conn->qcap ? conn->qcap * 2 : 8;
        eddy__mqueued *q = eddy__mem_realloc(conn->queue, cap * sizeof(*q));
        if (!q)
            return false;
        conn->queue = q;
        conn->qcap = cap;
    }
    eddy__mqueued q = {0, NULL, NULL};
    q.argv = eddy__mem_calloc((size_t)c->argc, sizeof(char *));
    q.argvlen = eddy__mem_malloc((size_t)c->argc * sizeof(size_t));
    if (!q.argv || !q.argvlen) {
        free_queued(&q);
        return false;
    }
    for (int i = 0; i < c->argc; i++) {
        q.argv[i] = eddy__mem_memdup(c->argv[i], c->argvlen[i]);
        if (!q.argv[i]) {
            q.argc = i;
            free_queued(&q);
            return false;
        }
        q.argvlen[i] = c->argvlen[i];
    }
    q.argc = c->argc;
    conn->queue[conn->nqueue++] = q;
    return true;
}

static void begin_locked(eddy__mctx *c) {
    pthread_mutex_lock(&c->eng->mu);
    c->now_ms = realtime_ms();
    eddy__mkey_expire_due(c);
}

static void end_locked(eddy__mctx *c) {
    if (c->dirty) {
        eddy__mem_engine *e = c->eng;
        uint64_t seq = atomic_fetch_add_explicit(&e->seq, 1, memory_order_release) + 1;
        const eddy__mobj *appended = c->other_write ? NULL : c->appended;
        /* whether the write can serve a blocked read at all */
        bool serving = appended || !c->quiet || c->other_write;
        if (appended)
            appended->v.stream->wseq = seq;
        else if (serving)
            e->other_seq = seq;
        if (e->conn_waiters && serving)
            wake_conns(e, appended);
    }
    if (c->blocked) /* what the read saw (its own write, a new consumer, included) */
        c->conn->blocked_seq = atomic_load_explicit(&c->eng->seq, memory_order_relaxed);
    pthread_mutex_unlock(&c->eng->mu);
}

static void run_exec(eddy__mctx *c) {
    eddy__mem_conn *conn = c->conn;
    if (conn->multi_failed) {
        discard_queue(conn);
        eddy__mctx_error(c, "EXECABORT Transaction discarded because of previous errors.");
        return;
    }
    begin_locked(c);
    eddy__mresp_array(c->out, conn->nqueue);
    int argc = c->argc;
    const char **argv = c->argv;
    const size_t *argvlen = c->argvlen;
    c->in_exec = true;
    for (size_t i = 0; i < conn->nqueue; i++) {
        eddy__mqueued *q = &conn->queue[i];
        c->argc = q->argc;
        c->argv = (const char **)q->argv;
        c->argvlen = q->argvlen;
        c->mark = c->out->len;
        /* Queued commands passed resolve() when they were queued. */
        const cmd_def *d = lookup(commands, q->argv[0], q->argvlen[0]);
        if (d->subs)
            d = lookup(d->subs, q->argv[1], q->argvlen[1]);
        d->fn(c);
    }
    c->in_exec = false;
    c->other_write = true; /* several commands: whatever they wrote wakes every waiter */
    c->argc = argc;
    c->argv = argv;
    c->argvlen = argvlen;
    end_locked(c);
    discard_queue(conn);
}

static void dispatch(eddy__mctx *c) {
    eddy__mem_conn *conn = c->conn;
    if (c->argc < 1) {
        eddy__mctx_error(c, "ERR empty command");
        return;
    }
    const cmd_def *d = resolve(c);
    if (!d) {
        if (conn->in_multi)
            conn->multi_failed = true;
        return;
    }
    if (d->fn == cmd_multi_marker) {
        if (conn->in_multi) {
            eddy__mctx_error(c, "ERR MULTI calls can not be nested");
        } else {
            conn->in_multi = true;
            eddy__mresp_status(c->out, "OK");
        }
        return;
    }
    if (d->fn == cmd_exec_marker) {
        if (!conn->in_multi)
            eddy__mctx_error(c, "ERR EXEC without MULTI");
        else
            run_exec(c);
        return;
    }
    if (d->fn == cmd_discard_marker) {
        if (!conn->in_multi) {
            eddy__mctx_error(c, "ERR DISCARD without MULTI");
        } else {
            discard_queue(conn);
            eddy__mresp_status(c->out, "OK");
        }
        return;
    }
    if (conn->in_multi) {
        if (!queue_command(c)) {
            conn->multi_failed = true; /* a command the client believes queued is missing */
            eddy__mctx_oom(c);
            return;
        }
        eddy__mresp_status(c->out, "QUEUED");
        return;
    }
    if (conn->blocked_cmd && d->fn != eddy__mcmd_xread)
        eddy__mconn_unblock(conn);
    begin_locked(c);
    d->fn(c);
    end_locked(c);
}

/* A command inside MULTI that could not even start: an EXEC or DISCARD ends the transaction
 * (nothing of it ran), anything else dooms it (the client believes it queued). */
static void fail_in_multi(eddy__mem_conn *conn, int argc, const char **argv,
                          const size_t *argvlen) {
    if (argc > 0 && (eddy__marg_is(argv[0], argvlen[0], "exec") ||
                     eddy__marg_is(argv[0], argvlen[0], "discard")))
        discard_queue(conn);
    else
        conn->multi_failed = true;
}

void eddy__mem_conn_set_arena(eddy__mem_conn *conn, struct eddy__reply_arena *arena) {
    conn->out.arena = arena;
}

redisReply *eddy__mem_exec(eddy__mem_conn *conn, int argc, const char **argv, const size_t *argvlen,
                           long long *block_ms) {
    long long ignored;
    if (!block_ms)
        block_ms = &ignored;
    *block_ms = -1;

    size_t small[16];
    size_t *lens = NULL;
    if (!argvlen && argc > 0) {
        lens = argc <= 16 ? small : eddy__mem_malloc((size_t)argc * sizeof(size_t));
        if (!lens)
            return NULL;
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        argvlen = lens;
    }
    /* Before anything runs: a command that changed data and answers with one node must not
     * then fail for want of memory for its reply. */
    if (!eddy__mresp_prepare(&conn->out)) {
        if (conn->in_multi)
            fail_in_multi(conn, argc, argv, argvlen);
        if (lens && lens != small)
            eddy__mem_free(lens);
        return NULL;
    }

    conn->wait_nkeys = -1; /* until a blocked read says what it waits on */
    eddy__mctx c = {0};
    c.eng = conn->engine;
    c.conn = conn;
    c.argc = argc;
    c.argv = argv;
    c.argvlen = argvlen;
    c.out = &conn->out;
    c.mark = 0;
    dispatch(&c);
    if (lens && lens != small)
        eddy__mem_free(lens);

    if (c.blocked) {
        eddy__mresp_reset(&conn->out);
        *block_ms = c.block_ms;
        return NULL;
    }
    if (eddy__mctx_failed(&c)) {
        eddy__mresp_reset(&conn->out);
        return NULL;
    }
    redisReply *reply = eddy__mresp_build(&conn->out);
    eddy__mresp_reset(&conn->out);
    return reply;
}

/* ---- invariant checks (tests) ------------------------------------------------------------- */

static const char *check_group(eddy__mgroup *g) {
    size_t in_consumers = 0;
    for (size_t i = 0; i < g->consumers.nent; i++) {
        if (!g->consumers.ent[i].key)
            continue;
        eddy__mconsumer *cons = g->consumers.ent[i].val;
        eddy__mid prev = {0, 0};
        bool first = true;
        for (eddy__mskl_node *n = eddy__mskl_first(&cons->pel); n; n = eddy__mskl_next(n)) {
            eddy__mnack *nack = n->item;
            if (nack->consumer != cons)
                return "consumer PEL holds another consumer's entry";
            eddy__mskl_node *gn = eddy__mskl_find(&g->pel, nack);
            if (!gn || gn->item != nack)
                return "consumer PEL entry missing from the group PEL";
            if (!first && eddy__mid_cmp(prev, nack->id) >= 0)
                return "consumer PEL out of order";
            prev = nack->id;
            first = false;
            in_consumers++;
        }
    }
    if (in_consumers != g->pel.len)
        return "group PEL and consumer PELs differ in size";
    return NULL;
}

static const char *check_stream(eddy__mstream *s) {
    size_t live = 0, tombs = 0;
    for (size_t i = s->head; i < s->n; i++) {
        if (i > s->head && eddy__mid_cmp(s->e[i - 1].id, s->e[i].id) >= 0)
            return "stream entries out of order";
        const eddy__mentry *e = &s->e[i];
        if (e->deleted) {
            tombs++;
            continue;
        }
        live++;
        if (!e->chunk || e->chunk->live == 0 || e->data < e->chunk->data ||
            e->data >= e->chunk->data + e->chunk->used)
            return "entry bytes outside their chunk";
    }
    if (live != s->length || tombs != s->tombs)
        return "stream length or tombstone count wrong";
    if (s->length && s->e[s->head].deleted)
        return "stream head is a tombstone";
    uint64_t node_live = 0;
    for (size_t i = s->nhead; i < s->nn; i++) {
        node_live += s->nodes[i].live;
        if (s->nodes[i].live > s->nodes[i].total)
            return "node live count above total";
        if (i > s->nhead && s->nodes[i - 1].serial >= s->nodes[i].serial)
            return "nodes out of order";
    }
    if (node_live != s->length)
        return "node live counts do not add up to the stream length";
    if (s->length && eddy__mid_cmp(s->first_id, s->e[s->head].id) != 0)
        return "first id is not the first live entry";
    for (size_t i = 0; i < s->groups.nent; i++) {
        if (!s->groups.ent[i].key)
            continue;
        const char *err = check_group(s->groups.ent[i].val);
        if (err)
            return err;
    }
    return NULL;
}

const char *eddy__mem_engine_check(eddy__mem_engine *e) {
    const char *err = NULL;
    pthread_mutex_lock(&e->mu);
    size_t with_ttl = 0;
    for (size_t i = 0; i < e->keys.nent && !err; i++) {
        if (!e->keys.ent[i].key)
            continue;
        eddy__mobj *o = e->keys.ent[i].val;
        if (o->key != e->keys.ent[i].key)
            err = "object key pointer is stale";
        if (o->expire_at >= 0) {
            with_ttl++;
            eddy__mskl_node *n = eddy__mskl_find(&e->expires, o);
            if (!n || n->item != o)
                err = "key with a TTL missing from the expiry schedule";
        }
        if (o->type == EDDY__MT_STREAM && !err)
            err = check_stream(o->v.stream);
        if ((o->type == EDDY__MT_SET && eddy__mdict_size(&o->v.set) == 0) ||
            (o->type == EDDY__MT_HASH && eddy__mdict_size(&o->v.hash) == 0) ||
            (o->type == EDDY__MT_ZSET && eddy__mzset_card(o->v.zset) == 0))
            err = "empty aggregate key left behind";
    }
    if (!err && with_ttl != e->expires.len)
        err = "expiry schedule size differs from keys with a TTL";
    pthread_mutex_unlock(&e->mu);
    return err;
}

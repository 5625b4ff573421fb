/* Blocking transport; see conn.h.
 *
 * Interrupting a blocking read: the reader marks itself in_read only after its whole pipeline
 * was written, so when another thread shuts the socket down to wake it, every acknowledgement
 * queued ahead of the read has already reached the server. The memory engine is woken
 * instead, through its condition variable. */
#include "conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "conn_state.h"
#include "error.h"
#include "redis.h"
#include "reply.h"
#include "sigpipe.h"
#include "timing.h"

void bcond_init_monotonic(pthread_cond_t *cond) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cond, &attr);
    pthread_condattr_destroy(&attr);
}

long long bconn_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

eddy_status bconn_init(bconn *c, const eddy__settings *s) {
    memset(c, 0, sizeof(*c));
    c->s = s;
    pthread_mutex_init(&c->lock, NULL);
    bcond_init_monotonic(&c->wake);
    c->client_id = -1;
    c->seed = (unsigned)(bconn_now_ms() ^ (long long)(uintptr_t)c ^ getpid());
    /* The engine is taken now, not at connect, so bconn_interrupt can read it unlocked. */
    if (s->url.kind == EDDY__URL_MEMORY && !(c->engine = eddy__mem_engine_acquire(s->url.name)))
        return EDDY_ERR_NOMEM;
    return EDDY_OK;
}

static void drop(bconn *c) {
    c->state_epoch = 0; /* a loss was reported before, or this is a close */
    pthread_mutex_lock(&c->lock);
    c->client_id = -1;
    if (c->rc) {
        redisFree(c->rc);
        c->rc = NULL;
    }
    pthread_mutex_unlock(&c->lock);
    if (c->mc) {
        eddy__mem_conn_free(c->mc);
        c->mc = NULL;
    }
}

void bconn_close(bconn *c) { drop(c); }

void bconn_destroy(bconn *c) {
    drop(c);
    eddy__reply_arena_free(c->arena);
    c->arena = NULL;
    free(c->out);
    c->out = NULL;
    if (c->engine)
        eddy__mem_engine_release(c->engine);
    c->engine = NULL;
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
}

bool bconn_connected(const bconn *c) { return c->rc || c->mc; }

static struct timeval tv_ms(long long ms) {
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    return tv;
}

static eddy_status exec_redis(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                              bool cuttable, redisReply **replies, eddy_error *err);

/* CLIENT ID, the handshake's last command on every connection, so that a peer that does not
 * speak RESP fails at connect; a server that refuses it (an ACL) leaves the id unknown: a pause
 * then cuts a read by shutting the socket down only. */
static eddy_status learn_id(bconn *c, eddy_error *err) {
    eddy__cmdlist cmds;
    eddy__cmdlist_init(&cmds);
    eddy__client_id_cmd(&cmds);
    eddy_status st = eddy__cmdlist_status(&cmds);
    redisReply *reply = NULL;
    if (st == EDDY_OK)
        st = exec_redis(c, &cmds, -1, false, &reply, err);
    long long id = -1;
    if (st == EDDY_OK && (st = eddy__client_id_check(reply, &id, err)) == EDDY_OK) {
        pthread_mutex_lock(&c->lock);
        c->client_id = id;
        pthread_mutex_unlock(&c->lock);
    }
    bconn_release(c, &reply, 1);
    eddy__cmdlist_reset(&cmds);
    return st == EDDY_ERR_NOMEM ? eddy__fail(err, st, "out of memory connecting") : st;
}

/* err may be the caller's NULL: the tracker then names the status only. */
static eddy_status connect_failed(bconn *c, eddy_status st, const eddy_error *err) {
    eddy__conn_failed(c->s->conn_state, st, err);
    c->attempt = eddy__conn_next_attempt(c->attempt, st);
    return st;
}

eddy_status bconn_connect(bconn *c, eddy_error *err) {
    if (bconn_connected(c))
        return EDDY_OK;
    const eddy__url *url = &c->s->url;
    if (url->kind == EDDY__URL_MEMORY) {
        if (!(c->mc = eddy__mem_conn_new(c->engine)))
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory opening memory://%s", url->name);
        if (c->arena)
            eddy__mem_conn_set_arena(c->mc, c->arena);
        eddy__conn_up(c->s->conn_state, &c->state_epoch);
        return EDDY_OK;
    }
    struct timeval tv = tv_ms(c->s->connect_timeout_ms);
    redisContext *rc = url->kind == EDDY__URL_TCP
                           ? redisConnectWithTimeout(url->host, url->port, tv)
                           : redisConnectUnixWithTimeout(url->path, tv);
    if (!rc)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory connecting");
    if (rc->err) {
        eddy_status st = eddy__redis_context_status(rc->err, rc->errstr, err);
        redisFree(rc);
        return connect_failed(c, st, err);
    }
    if (c->arena)
        eddy__reply_arena_install(c->arena, rc->reader);
    pthread_mutex_lock(&c->lock);
    c->rc = rc;
    pthread_mutex_unlock(&c->lock);
    eddy__cmdlist hs;
    eddy__cmdlist_init(&hs);
    eddy_status st = eddy__handshake_cmds(url, &hs);
    if (st == EDDY_OK && hs.n > 0) {
        redisReply *replies[2] = {NULL, NULL};
        st = exec_redis(c, &hs, -1, false, replies, err);
        if (st == EDDY_OK)
            st = eddy__handshake_check(replies, hs.n, err);
        bconn_release(c, replies, hs.n);
    }
    eddy__cmdlist_reset(&hs);
    if (st == EDDY_OK)
        st = learn_id(c, err);
    if (st != EDDY_OK) {
        drop(c);
        return connect_failed(c, st, err);
    }
    c->attempt = 0;
    eddy__conn_up(c->s->conn_state, &c->state_epoch);
    return EDDY_OK;
}

void bconn_release(bconn *c, redisReply **replies, size_t n) {
    if (c->live_arena) {
        eddy__reply_arena_reset(c->live_arena);
        c->live_arena = NULL;
        for (size_t i = 0; i < n; i++)
            replies[i] = NULL;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (replies[i])
            freeReplyObject(replies[i]);
        replies[i] = NULL;
    }
}

eddy_status bconn_use_arena(bconn *c) {
    if (!c->arena && !(c->arena = eddy__reply_arena_new()))
        return EDDY_ERR_NOMEM;
    if (c->mc)
        eddy__mem_conn_set_arena(c->mc, c->arena);
    return EDDY_OK;
}

/* Writes the pipeline in RESP into c->out; its length, 0 on OOM. A buffer grown for a large
 * command is not kept. */
static size_t format_pipeline(bconn *c, const eddy__cmdlist *cmds) {
    size_t len = 0;
    for (size_t i = 0; i < cmds->n; i++)
        len += eddy__cmd_resp_size(&cmds->cmds[i]);
    if (len > c->out_cap || (c->out_cap > (1u << 20) && len < c->out_cap / 4)) {
        char *out = malloc(len);
        if (!out)
            return 0;
        free(c->out);
        c->out = out;
        c->out_cap = len;
    }
    char *at = c->out;
    for (size_t i = 0; i < cmds->n; i++)
        at = eddy__cmd_resp_write(&cmds->cmds[i], at);
    return len;
}

static eddy_status exec_redis(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                              bool cuttable, redisReply **replies, eddy_error *err) {
    redisContext *rc = c->rc;
    c->live_arena = eddy__reply_arena_of(rc->reader); /* the replies below live in it */
    if (cuttable) {
        pthread_mutex_lock(&c->lock);
        c->blocking = true;
        pthread_mutex_unlock(&c->lock);
    }
    redisSetTimeout(rc, tv_ms(eddy__reply_timeout_ms(c->s, block_ms)));
    size_t len = format_pipeline(c, cmds);
    bool appended = len > 0 && redisAppendFormattedCommand(rc, c->out, len) == REDIS_OK;
    if (!appended) {
        pthread_mutex_lock(&c->lock);
        c->blocking = false;
        pthread_mutex_unlock(&c->lock);
        if (len > 0)
            drop(c); /* hiredis ran out of memory: the context is unusable */
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory writing commands");
    }
    eddy__sigpipe_guard guard;
    eddy__sigpipe_block(&guard);
    int done = 0;
    int rv = REDIS_OK;
    while (!done && rv == REDIS_OK)
        rv = redisBufferWrite(rc, &done);
    eddy__sigpipe_restore(&guard);
    eddy_status st = EDDY_OK;
    if (rv != REDIS_OK) {
        pthread_mutex_lock(&c->lock);
        bool cut = cuttable && c->cut; /* the server dropped us for a pause */
        if (cut)
            c->cut = false;
        pthread_mutex_unlock(&c->lock);
        st = cut ? eddy__fail(err, EDDY_ERR_CLOSED, "interrupted")
                 : eddy__redis_context_status(rc->err, rc->errstr, err);
    }
    if (st == EDDY_OK && cuttable) {
        pthread_mutex_lock(&c->lock);
        if (c->interrupted || c->cut)
            st = eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
        else
            c->in_read = true;
        c->cut = false;
        pthread_mutex_unlock(&c->lock);
    }
    for (size_t i = 0; st == EDDY_OK && i < cmds->n; i++) {
        void *reply = NULL;
        if (redisGetReply(rc, &reply) != REDIS_OK) {
            pthread_mutex_lock(&c->lock);
            bool interrupted = (c->interrupted || c->cut) && c->in_read;
            c->cut = false;
            pthread_mutex_unlock(&c->lock);
            st = interrupted ? eddy__fail(err, EDDY_ERR_CLOSED, "interrupted")
                             : eddy__redis_context_status(rc->err, rc->errstr, err);
            break;
        }
        replies[i] = reply;
    }
    pthread_mutex_lock(&c->lock);
    c->in_read = false;
    c->blocking = false;
    pthread_mutex_unlock(&c->lock);
    if (st != EDDY_OK) {
        eddy__conn_lost(c->s->conn_state, &c->state_epoch, st, err);
        drop(c);
        bconn_release(c, replies, cmds->n);
    }
    return st;
}

/* Consumes a cut: the memory engine has not run the read, so nothing is lost. */
static bool interrupted(bconn *c) {
    pthread_mutex_lock(&c->lock);
    bool v = c->interrupted || c->cut;
    c->cut = false;
    pthread_mutex_unlock(&c->lock);
    return v;
}

/* What a blocking read that timed out answers, where the engine builds replies. */
static redisReply *nil_reply(bconn *c) {
    if (!c->arena)
        return eddy__reply_nil();
    redisReply *r = eddy__reply_arena_alloc(c->arena, sizeof(*r));
    if (r)
        *r = (redisReply){.type = REDIS_REPLY_NIL};
    return r;
}

static eddy_status exec_memory(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                               bool cuttable, redisReply **replies, eddy_error *err) {
    c->live_arena = c->arena; /* the engine builds this connection's replies there, if any */
    for (size_t i = 0; i < cmds->n; i++) {
        const eddy__cmd *cmd = &cmds->cmds[i];
        if (cuttable && i + 1 == cmds->n && interrupted(c)) { /* a pause before the read ran */
            bconn_release(c, replies, cmds->n);
            return eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
        }
        long long deadline = -1;
        for (;;) {
            uint64_t seen = eddy__mem_engine_seq(c->engine);
            long long wait = -1;
            replies[i] = eddy__mem_exec(c->mc, cmd->argc, eddy__cmd_argv(cmd), cmd->argvlen, &wait);
            if (replies[i])
                break;
            if (wait < 0) {
                bconn_release(c, replies, cmds->n);
                return eddy__fail(err, EDDY_ERR_NOMEM, "memory backend: out of memory");
            }
            /* A blocking read found nothing: wait for a write, the deadline or a stop. */
            long long now = bconn_now_ms();
            if (deadline < 0)
                deadline = now + (wait > 0 ? wait : 1000LL * 3600 * 24 * 365);
            if (interrupted(c)) {
                bconn_release(c, replies, cmds->n);
                return eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
            }
            if (now >= deadline) {
                if (!(replies[i] = nil_reply(c))) {
                    bconn_release(c, replies, cmds->n);
                    return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
                }
                break;
            }
            eddy__mem_conn_wait(c->mc, seen, deadline);
            /* Interrupted while waiting: return before reading again, so that what was written
             * meanwhile is not taken (a pause's cut must read nothing more). */
            if (interrupted(c)) {
                bconn_release(c, replies, cmds->n);
                return eddy__fail(err, EDDY_ERR_CLOSED, "interrupted");
            }
        }
    }
    (void)block_ms;
    return EDDY_OK;
}

eddy_status bconn_exec_in(bconn *c, eddy__reply_arena *arena, const eddy__cmdlist *cmds,
                          long long block_ms, redisReply **replies, bool *in_arena,
                          eddy_error *err) {
    *in_arena = false;
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    eddy_status st = bconn_connect(c, err);
    if (st != EDDY_OK || cmds->n == 0)
        return st;
    if (c->mc)
        return exec_memory(c, cmds, block_ms, block_ms >= 0, replies, err);
    redisReader *reader = c->rc->reader;
    redisReplyObjectFunctions *fn = reader->fn;
    void *privdata = reader->privdata;
    eddy__reply_arena_install(arena, reader);
    st = exec_redis(c, cmds, block_ms, block_ms >= 0, replies, err);
    c->live_arena = NULL; /* the caller's now */
    if (c->rc) {          /* still connected (the same reader): its own objects again */
        c->rc->reader->fn = fn;
        c->rc->reader->privdata = privdata;
    }
    *in_arena = st == EDDY_OK;
    return st;
}

eddy_status bconn_exec_read(bconn *c, const eddy__cmdlist *cmds, long long block_ms, bool cuttable,
                            redisReply **replies, eddy_error *err) {
    for (size_t i = 0; i < cmds->n; i++)
        replies[i] = NULL;
    eddy_status st = bconn_connect(c, err);
    if (st != EDDY_OK)
        return st;
    if (cmds->n == 0)
        return EDDY_OK;
    return c->mc ? exec_memory(c, cmds, block_ms, cuttable, replies, err)
                 : exec_redis(c, cmds, block_ms, cuttable, replies, err);
}

eddy_status bconn_exec(bconn *c, const eddy__cmdlist *cmds, long long block_ms,
                       redisReply **replies, eddy_error *err) {
    return bconn_exec_read(c, cmds, block_ms, block_ms >= 0, replies, err);
}

bool bconn_sleep(bconn *c, long long ms) {
    long long deadline = bconn_now_ms() + ms;
    struct timespec ts = {(time_t)(deadline / 1000), (long)(deadline % 1000) * 1000000};
    pthread_mutex_lock(&c->lock);
    while (!c->interrupted && !c->woken && bconn_now_ms() < deadline)
        if (pthread_cond_timedwait(&c->wake, &c->lock, &ts) == ETIMEDOUT)
            break;
    bool ok = !c->interrupted && !c->woken;
    c->woken = false;
    pthread_mutex_unlock(&c->lock);
    return ok;
}

bool bconn_backoff(bconn *c) {
    unsigned attempt = c->attempt ? c->attempt - 1 : 0;
    return bconn_sleep(c, eddy__backoff_delay_ms(attempt, c->s->reconnect_min_ms,
                                                 c->s->reconnect_max_ms, &c->seed));
}

void bconn_interrupt(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->interrupted = true;
    if (c->in_read && c->rc)
        shutdown(c->rc->fd, SHUT_RDWR); /* wakes the reader blocked in recv() */
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (c->engine)
        eddy__mem_engine_wake(c->engine);
}

long long bconn_wake(bconn *c, bool cut) {
    long long kill = -1;
    pthread_mutex_lock(&c->lock);
    c->woken = true;
    if (cut) {
        c->cut = true;
        if (c->blocking && c->rc)
            kill = c->client_id;
        if (c->in_read && c->rc)
            shutdown(c->rc->fd, SHUT_RDWR);
    }
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (cut && c->engine)
        eddy__mem_engine_wake(c->engine);
    return kill;
}

void bconn_wake_clear(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->woken = false;
    c->cut = false;
    pthread_mutex_unlock(&c->lock);
}

void bconn_resume(bconn *c) {
    pthread_mutex_lock(&c->lock);
    c->interrupted = false;
    pthread_mutex_unlock(&c->lock);
}

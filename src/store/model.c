/* SPDX-License-Identifier: BSD-3-Clause */
/* A read model kept in Redis: write sets, their commit and the model's reads (model.h). The
 * function the commit calls is the library's EDDY__MODEL_FN (src/link/library.c, run natively by
 * src/memory/model.c); its keys and arguments are described there. */
#include "store/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/event_internal.h"
#include "keys.h"
#include "link/redis.h"
#include "util/functions.h"
#include "util/reply.h"

/* The function's fixed keys: the position, the versions, the registry. */
enum { FIXED_KEYS = 3 };
#define MAX_KEY 256
#define MAX_NAME (64 * 1024)
#define MAX_VALUE (1024 * 1024)
#define MAX_WRITES 1000

struct eddy__model {
    char *ns, *feed_id;
    char *pos_key, *ver_key, *reg_key;
    char *prefix; /* "{ns}:rm:<feed>:k:", the model keys' prefix */
    size_t prefix_len;
    eddy_feed_writes_fn writes;
    void *user;
};

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

eddy__model *eddy__model_new(const char *ns, const char *feed_id, eddy_feed_writes_fn writes,
                             void *user) {
    eddy__model *m = calloc(1, sizeof(*m));
    if (!m)
        return NULL;
    m->ns = dup_str(ns);
    m->feed_id = dup_str(feed_id);
    m->pos_key = eddy__key_model(ns, feed_id, "pos");
    m->ver_key = eddy__key_model(ns, feed_id, "ver");
    m->reg_key = eddy__key_model(ns, feed_id, "keys");
    m->prefix = eddy__key_model(ns, feed_id, "k:");
    m->writes = writes;
    m->user = user;
    if (!m->ns || !m->feed_id || !m->pos_key || !m->ver_key || !m->reg_key || !m->prefix) {
        eddy__model_free(m);
        return NULL;
    }
    m->prefix_len = strlen(m->prefix);
    return m;
}

void eddy__model_free(eddy__model *m) {
    if (!m)
        return;
    free(m->ns);
    free(m->feed_id);
    free(m->pos_key);
    free(m->ver_key);
    free(m->reg_key);
    free(m->prefix);
    free(m);
}

/* ---- write sets -------------------------------------------------------------------------- */

void eddy__writes_init(eddy_writes *w, const eddy__model *m) {
    memset(w, 0, sizeof(*w));
    w->m = m;
    eddy__cmd_init(&w->keys);
    eddy__cmd_init(&w->args);
    eddy__cmd_init(&w->ev);
}

void eddy__writes_clear(eddy_writes *w) {
    w->keys.argc = w->args.argc = w->ev.argc = 0;
    w->keys.used = w->args.used = w->ev.used = 0;
    w->keys.failed = w->args.failed = w->ev.failed = 0;
    w->nwrites = w->events = 0;
    w->last = 0;
    w->failed = false;
}

void eddy__writes_reset(eddy_writes *w) {
    eddy__cmd_reset(&w->keys);
    eddy__cmd_reset(&w->args);
    eddy__cmd_reset(&w->ev);
    w->nwrites = w->events = 0;
}

static bool key_ok(const char *key) {
    size_t n = 0;
    for (; key[n]; n++) {
        unsigned char ch = (unsigned char)key[n];
        if (ch <= ' ' || ch > '~' || ch == '{' || ch == '}' || n >= MAX_KEY)
            return false;
    }
    return n > 0;
}

/* The 1-based index of the model key `key` among w's keys, added when new; 0 on OOM. */
static unsigned key_index(eddy_writes *w, const char *key) {
    const eddy__model *m = w->m;
    size_t klen = strlen(key);
    for (int i = 0; i < w->keys.argc; i++)
        if (w->keys.argvlen[i] == m->prefix_len + klen &&
            memcmp(w->keys.argv[i] + m->prefix_len, key, klen) == 0)
            return (unsigned)i + 1;
    eddy__cmd_fmt(&w->keys, "%s%s", m->prefix, key);
    return w->keys.failed ? 0 : (unsigned)w->keys.argc;
}

/* Checks one write and adds its operation and key; the caller adds the operation's
 * arguments. */
static eddy_status write_begin(eddy_writes *w, const char *op, const char *key, size_t name_len,
                               size_t value_len, eddy_error *err) {
    if (!w || !w->m)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "write set is NULL");
    if (!key || !key_ok(key))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "%s: a model key is 1-%d printable characters other than space, '{' "
                          "and '}'",
                          op, MAX_KEY);
    if (name_len > MAX_NAME || value_len > MAX_VALUE)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE,
                          "%s '%s': fields and members hold up to %d bytes, values %d", op, key,
                          MAX_NAME, MAX_VALUE);
    if (w->nwrites >= MAX_WRITES)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "%s '%s': more than %d writes for one event", op,
                          key, MAX_WRITES);
    unsigned k = key_index(w, key);
    if (k == 0)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__cmd_str(&w->ev, op);
    eddy__cmd_u64(&w->ev, k);
    return EDDY_OK;
}

/* Counts a write whose arguments are in; out of memory fails the event. */
static eddy_status write_end(eddy_writes *w, eddy_error *err) {
    if (w->ev.failed || w->keys.failed) {
        w->failed = true;
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    w->nwrites++;
    return EDDY_OK;
}

static bool name_given(const void *p, size_t len) { return p || len == 0; }

eddy_status eddy_writes_hset(eddy_writes *w, const char *key, const void *field, size_t field_len,
                             const void *value, size_t value_len, eddy_error *err) {
    if (!name_given(field, field_len) || !name_given(value, value_len))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "hset: field or value is NULL");
    eddy_status st = write_begin(w, "hset", key, field_len, value_len, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd_arg(&w->ev, field, field_len);
    eddy__cmd_arg(&w->ev, value, value_len);
    return write_end(w, err);
}

eddy_status eddy_writes_hdel(eddy_writes *w, const char *key, const void *field, size_t field_len,
                             eddy_error *err) {
    if (!name_given(field, field_len))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "hdel: field is NULL");
    eddy_status st = write_begin(w, "hdel", key, field_len, 0, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd_arg(&w->ev, field, field_len);
    return write_end(w, err);
}

eddy_status eddy_writes_hincr(eddy_writes *w, const char *key, const void *field, size_t field_len,
                              long long by, eddy_error *err) {
    if (!name_given(field, field_len))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "hincr: field is NULL");
    eddy_status st = write_begin(w, "hincr", key, field_len, 0, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd_arg(&w->ev, field, field_len);
    eddy__cmd_fmt(&w->ev, "%lld", by);
    return write_end(w, err);
}

static eddy_status member_write(eddy_writes *w, const char *op, const char *key, const void *member,
                                size_t member_len, eddy_error *err) {
    if (!name_given(member, member_len))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s: member is NULL", op);
    eddy_status st = write_begin(w, op, key, member_len, 0, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd_arg(&w->ev, member, member_len);
    return write_end(w, err);
}

eddy_status eddy_writes_sadd(eddy_writes *w, const char *key, const void *member, size_t member_len,
                             eddy_error *err) {
    return member_write(w, "sadd", key, member, member_len, err);
}

eddy_status eddy_writes_srem(eddy_writes *w, const char *key, const void *member, size_t member_len,
                             eddy_error *err) {
    return member_write(w, "srem", key, member, member_len, err);
}

eddy_status eddy_writes_del(eddy_writes *w, const char *key, eddy_error *err) {
    eddy_status st = write_begin(w, "del", key, 0, 0, err);
    return st != EDDY_OK ? st : write_end(w, err);
}

/* Drops what the event being gathered added: its writes, and keys only it named. */
static void event_undo(eddy_writes *w, int keys_before) {
    while (w->keys.argc > keys_before) {
        w->keys.argc--;
        w->keys.used = (size_t)(w->keys.argv[w->keys.argc] - w->keys.buf);
    }
    w->keys.failed = 0;
    w->ev.argc = 0;
    w->ev.used = 0;
    w->ev.failed = 0;
    w->nwrites = 0;
    w->failed = false;
}

eddy_status eddy__model_gather(const eddy__model *m, eddy_writes *w, void *event,
                               const eddy_event_meta *meta, eddy_error *err) {
    if (!meta || !meta->stream_id || !meta->stream_id[0] || meta->version < 1 || meta->position < 1)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "feed '%s': a model kept in Redis applies only events with their store "
                          "metadata (stream id, version, position)",
                          m->feed_id);
    if (meta->position <= w->last)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "feed '%s': position %lld after %lld in one commit", m->feed_id,
                          meta->position, w->last);
    int keys_before = w->keys.argc;
    w->ev.argc = 0;
    w->ev.used = 0;
    w->nwrites = 0;
    eddy_error e = {0};
    eddy_status st = m->writes(event, meta, w, &e, m->user);
    if (st == EDDY_OK && w->failed)
        st = eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory");
    if (st == EDDY_OK) {
        size_t used = w->args.used;
        int argc = w->args.argc;
        eddy__cmd_str(&w->args, meta->stream_id);
        eddy__cmd_fmt(&w->args, "%lld", meta->version);
        eddy__cmd_fmt(&w->args, "%lld", meta->position);
        eddy__cmd_u64(&w->args, w->nwrites);
        for (int i = 0; i < w->ev.argc; i++)
            eddy__cmd_arg(&w->args, w->ev.argv[i], w->ev.argvlen[i]);
        if (w->args.failed) {
            w->args.argc = argc;
            w->args.used = used;
            w->args.failed = 0;
            st = eddy__fail(&e, EDDY_ERR_NOMEM, "out of memory");
        }
    }
    if (st != EDDY_OK) {
        event_undo(w, keys_before);
        if (st == EDDY_PENDING)
            st = eddy__fail(&e, EDDY_ERR_ILLEGAL_STATE,
                            "feed '%s': writes returned EDDY_PENDING, which needs a final status",
                            m->feed_id);
        if (!e.detail[0])
            eddy__fail(&e, st, "feed '%s': the writes of stream '%s' version %lld failed",
                       m->feed_id, meta->stream_id, meta->version);
        e.status = st;
        if (err)
            *err = e;
        return st;
    }
    w->ev.argc = 0;
    w->ev.used = 0;
    w->nwrites = 0;
    w->events++;
    w->last = meta->position;
    return EDDY_OK;
}

eddy_status eddy__model_commit_cmd(const eddy__model *m, const eddy_writes *w, bool page,
                                   eddy__cmdlist *out, eddy_error *err) {
    if (w->events == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "model commit: no events");
    eddy__cmd *c = eddy__cmdlist_add(out, 0, 0);
    if (!c)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    eddy__cmd_str(c, "FCALL");
    eddy__cmd_str(c, EDDY__MODEL_FN);
    eddy__cmd_u64(c, (unsigned long long)(FIXED_KEYS + w->keys.argc));
    eddy__cmd_str(c, m->pos_key);
    eddy__cmd_str(c, m->ver_key);
    eddy__cmd_str(c, m->reg_key);
    for (int i = 0; i < w->keys.argc; i++)
        eddy__cmd_arg(c, w->keys.argv[i], w->keys.argvlen[i]);
    eddy__cmd_str(c, page ? "page" : "live");
    eddy__cmd_u64(c, w->events);
    for (int i = 0; i < w->args.argc; i++)
        eddy__cmd_arg(c, w->args.argv[i], w->args.argvlen[i]);
    if (eddy__cmd_status(c) != EDDY_OK) {
        eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

eddy_status eddy__model_commit_result(const redisReply *r, long long *applied, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "model commit", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_INTEGER || r->integer < 0)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "model commit: unexpected reply type %d",
                          r->type);
    if (applied)
        *applied = r->integer;
    return EDDY_OK;
}

/* ---- reads ------------------------------------------------------------------------------- */

eddy_status eddy__model_read_cmd(const char *ns, const char *feed_id, eddy__model_read what,
                                 const char *key, eddy__cmdlist *out, eddy_error *err) {
    if (!feed_id || !eddy__key_name_ok(feed_id))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "feed id: 1-128 printable characters, no space, '{', '}' or ':'");
    bool keyed = what == EDDY__MODEL_HASH || what == EDDY__MODEL_SET;
    if (keyed && (!key || !key_ok(key)))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "a model key is 1-%d printable characters other than space, '{' and '}'",
                          MAX_KEY);
    static const char *const verbs[] = {"GET", "HGETALL", "SMEMBERS", "HGETALL"};
    static const char *const parts[] = {"pos", NULL, NULL, "keys"};
    char part[MAX_KEY + 3];
    if (keyed)
        snprintf(part, sizeof(part), "k:%s", key);
    char *name = eddy__key_model(ns, feed_id, keyed ? part : parts[what]);
    eddy__cmd *c = name ? eddy__cmdlist_add(out, (int)what, 0) : NULL;
    if (c) {
        eddy__cmd_str(c, verbs[what]);
        eddy__cmd_str(c, name);
    }
    free(name);
    if (!c || eddy__cmd_status(c) != EDDY_OK) {
        if (c)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    return EDDY_OK;
}

eddy_status eddy__model_position_result(const redisReply *r, long long *position, eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "model position", err);
    if (st != EDDY_OK)
        return st;
    *position = 0;
    if (r->type == REDIS_REPLY_NIL)
        return EDDY_OK;
    char *end = NULL;
    long long v =
        r->type == REDIS_REPLY_STRING && r->len > 0 && r->len < 16 ? strtoll(r->str, &end, 10) : -1;
    if (v < 1 || !end || end != r->str + r->len) {
        char shown[64];
        return eddy__fail(err, EDDY_ERR_MALFORMED, "model position: the key holds '%s'",
                          r->type == REDIS_REPLY_STRING
                              ? eddy__printable(shown, sizeof(shown), r->str, r->len)
                              : "another type");
    }
    *position = v;
    return EDDY_OK;
}

eddy_status eddy__model_items_result(const char *ns, const char *feed_id, eddy__model_read what,
                                     const redisReply *r, eddy_model_item_fn each, void *user,
                                     eddy_error *err) {
    eddy_status st = eddy__reply_status(r, "model read", err);
    if (st != EDDY_OK)
        return st;
    if (r->type != REDIS_REPLY_ARRAY && r->type != 9 /* RESP3 set */ &&
        r->type != 10 /* RESP3 map */)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "model read: unexpected reply type %d", r->type);
    bool pairs = what != EDDY__MODEL_SET;
    if (pairs && r->elements % 2)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "model read: an odd number of elements");
    for (size_t i = 0; i < r->elements; i++)
        if (!eddy__reply_is_str(r->element[i]))
            return eddy__fail(err, EDDY_ERR_PROTOCOL, "model read: element %zu is no string", i);
    char *prefix = what == EDDY__MODEL_KEYS ? eddy__key_model(ns, feed_id, "k:") : NULL;
    if (what == EDDY__MODEL_KEYS && !prefix)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    size_t plen = prefix ? strlen(prefix) : 0;
    for (size_t i = 0; i < r->elements && st == EDDY_OK; i += pairs ? 2 : 1) {
        const redisReply *n = r->element[i], *v = pairs ? r->element[i + 1] : NULL;
        const char *name = n->str;
        size_t len = n->len;
        if (prefix) {
            if (len <= plen || memcmp(name, prefix, plen) != 0)
                continue; /* not a key of this model's layout */
            name += plen;
            len -= plen;
        }
        st = each(name, len, v ? v->str : NULL, v ? v->len : 0, user);
    }
    free(prefix);
    if (st != EDDY_OK && err && err->status != st)
        eddy__fail(err, st, "model read: stopped by the callback");
    return st;
}

eddy_status eddy__model_reading_cmd(eddy__model_reading *rd, const char *ns, const char *feed_id,
                                    eddy__model_read what, const char *key, eddy_model_item_fn each,
                                    void *user, eddy__cmdlist *out, eddy_error *err) {
    *rd = (eddy__model_reading){.ns = ns, .what = what, .each = each, .user = user};
    if (feed_id)
        snprintf(rd->feed_id, sizeof(rd->feed_id), "%s", feed_id);
    return eddy__model_read_cmd(ns, feed_id, what, key, out, err);
}

eddy_status eddy__model_reading_result(const redisReply *r, void *user, eddy_error *err) {
    eddy__model_reading *rd = user;
    if (rd->what == EDDY__MODEL_POSITION)
        return eddy__model_position_result(r, &rd->position, err);
    return eddy__model_items_result(rd->ns, rd->feed_id, rd->what, r, rd->each, rd->user, err);
}

eddy_status eddy__model_committed(const redisReply *r, void *user, eddy_error *err) {
    (void)user;
    return eddy__model_commit_result(r, NULL, err);
}

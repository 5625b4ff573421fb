/* Publishing; see publisher.h. The subject set only grows, so a subject known to be in it
 * never needs another SADD: the cache saves a command on every later publish. It is bounded;
 * past the bound SADD is simply sent every time. */
#include "publisher.h"
#include "eddy/value.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "entry.h"
#include "error.h"
#include "keys.h"
#include "redis.h"
#include "requests.h"
#include "subject.h"

enum { P_SADD = 100, P_XADD };

#define KNOWN_MAX 4096

struct eddy__publisher {
    const eddy__settings *s;
    char *subjects_key;
    pthread_mutex_t lock;
    char **known; /* open addressing, KNOWN_MAX * 2 slots */
    size_t nknown;
};

static size_t hash(const char *s) {
    size_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

eddy__publisher *eddy__publisher_new(const eddy__settings *s) {
    eddy__publisher *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->s = s;
    pthread_mutex_init(&p->lock, NULL);
    p->subjects_key = eddy__key_subjects(s->ns);
    p->known = calloc(KNOWN_MAX * 2, sizeof(*p->known));
    if (!p->subjects_key || !p->known) {
        eddy__publisher_free(p);
        return NULL;
    }
    return p;
}

void eddy__publisher_free(eddy__publisher *p) {
    if (!p)
        return;
    if (p->known)
        for (size_t i = 0; i < KNOWN_MAX * 2; i++)
            free(p->known[i]);
    free(p->known);
    free(p->subjects_key);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Finds subject's slot: the one holding it, or the empty one where it would go. */
static char **slot(eddy__publisher *p, const char *subject) {
    size_t i = hash(subject) % (KNOWN_MAX * 2);
    while (p->known[i] && strcmp(p->known[i], subject) != 0)
        i = (i + 1) % (KNOWN_MAX * 2);
    return &p->known[i];
}

static bool is_known(eddy__publisher *p, const char *subject) {
    pthread_mutex_lock(&p->lock);
    bool known = *slot(p, subject) != NULL;
    pthread_mutex_unlock(&p->lock);
    return known;
}

static void remember(eddy__publisher *p, const char *subject) {
    pthread_mutex_lock(&p->lock);
    char **sl = slot(p, subject);
    if (!*sl && p->nknown < KNOWN_MAX && (*sl = strdup(subject)))
        p->nknown++;
    pthread_mutex_unlock(&p->lock);
}

void eddy__publisher_connection_lost(eddy__publisher *p) {
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < KNOWN_MAX * 2; i++) {
        free(p->known[i]);
        p->known[i] = NULL;
    }
    p->nknown = 0;
    pthread_mutex_unlock(&p->lock);
}

eddy_status eddy__publish_prepare(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                  eddy__cmdlist *out, eddy_error *err) {
    if (!subject || !ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish: subject or event is NULL");
    eddy_status st = eddy__subject_check(subject, err);
    if (st != EDDY_OK)
        return st;
    if ((st = eddy_event_validate(ev, err)) != EDDY_OK)
        return st;
    if (eddy_event_extension(ev, EDDY__FAILED_ATTR))
        return eddy__fail(err, EDDY_ERR_RESERVED_ATTRIBUTE,
                          "the event carries '" EDDY__FAILED_ATTR "', which marks failure replies");
    size_t size = eddy_event_size(ev);
    if (size > p->s->max_event_size)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "event '%s' is %zu bytes; the limit is %zu",
                          eddy_event_id(ev), size, p->s->max_event_size);
    size_t before = out->n;
    if (!is_known(p, subject)) {
        eddy__cmd *sadd = eddy__cmdlist_add(out, P_SADD, 0);
        if (!sadd)
            return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
        eddy__cmd_str(sadd, "SADD");
        eddy__cmd_str(sadd, p->subjects_key);
        eddy__cmd_str(sadd, subject);
    }
    eddy__cmd *x = eddy__cmdlist_add(out, P_XADD, 0);
    char *key = eddy__key_stream(p->s->ns, subject);
    if (!x || !key) {
        free(key);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    eddy__cmd_str(x, "XADD");
    eddy__cmd_str(x, key);
    free(key);
    if (p->s->stream_maxlen > 0) {
        eddy__cmd_str(x, "MAXLEN");
        eddy__cmd_str(x, "~");
        eddy__cmd_fmt(x, "%lld", p->s->stream_maxlen);
    }
    eddy__cmd_str(x, "*");
    if ((st = eddy__entry_encode(ev, x)) == EDDY_OK)
        st = eddy__cmdlist_status_from(out, before);
    if (st != EDDY_OK) {
        while (out->n > before)
            eddy__cmd_reset(&out->cmds[--out->n]);
        return eddy__fail(err, st, "publish: could not build the command");
    }
    return EDDY_OK;
}

eddy_status eddy__publish_result(eddy__publisher *p, const eddy__cmdlist *cmds, size_t first,
                                 redisReply **replies, size_t *next, char *id, size_t idsize,
                                 eddy_error *err) {
    size_t i = first;
    eddy_status sadd_st = EDDY_OK;
    if (i < cmds->n && cmds->tags[i] == P_SADD) {
        sadd_st = eddy__reply_status(replies[i], "SADD", err);
        if (sadd_st == EDDY_OK)
            remember(p, cmds->cmds[i].argv[2]);
        i++;
    }
    *next = i + 1;
    eddy_status st = eddy__reply_status(replies[i], "XADD", err);
    if (st != EDDY_OK)
        return st;
    if (replies[i]->type != REDIS_REPLY_STRING)
        return eddy__fail(err, EDDY_ERR_PROTOCOL, "XADD: unexpected reply type %d",
                          replies[i]->type);
    if (id && idsize)
        snprintf(id, idsize, "%s", replies[i]->str);
    /* The message is stored; a failed SADD only delays discovery by pattern subscribers
     * until a later publish adds the subject. */
    if (sadd_st != EDDY_OK)
        eddy__log(&p->s->log, EDDY_LOG_WARN, "publish: subject registration failed");
    return EDDY_OK;
}

eddy_status eddy__publish_value_event(const eddy__settings *s, const char *type, eddy_pack_fn pack,
                                      void *user, eddy_event **out, eddy_error *err) {
    if (!s->source)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                          "publish_value needs settings.source for the event's source");
    if (!type || !pack)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "publish_value: type or pack is NULL");
    eddy_event *ev = eddy_event_new();
    if (!ev)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    char id[33];
    eddy__random_hex(id);
    char now[64];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    snprintf(now, sizeof(now), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    eddy_status st = eddy_event_set_id(ev, id);
    if (st == EDDY_OK)
        st = eddy_event_set_source(ev, s->source);
    if (st == EDDY_OK)
        st = eddy_event_set_type(ev, type);
    if (st == EDDY_OK)
        st = eddy_event_set_time(ev, now);
    if (st != EDDY_OK) {
        eddy_event_free(ev);
        return eddy__fail(err, st, "publish_value: could not build the event");
    }
    if ((st = eddy_event_set_value(ev, pack, user, err)) != EDDY_OK) {
        eddy_event_free(ev);
        return st;
    }
    *out = ev;
    return EDDY_OK;
}

eddy_status eddy__request_prepare(eddy__publisher *p, const char *subject, const eddy_event *ev,
                                  const char *reply_to, const char *request_id,
                                  long long deadline_ms, eddy__cmdlist *out, eddy_error *err) {
    eddy_status st = eddy__publish_prepare(p, subject, ev, out, err);
    if (st != EDDY_OK)
        return st;
    eddy__cmd *x = &out->cmds[out->n - 1]; /* the XADD: the request travels with the event */
    eddy__cmd_str(x, EDDY__F_REPLY_TO);
    eddy__cmd_str(x, reply_to);
    eddy__cmd_str(x, EDDY__F_REQUEST);
    eddy__cmd_str(x, request_id);
    eddy__cmd_str(x, EDDY__F_DEADLINE);
    eddy__cmd_fmt(x, "%lld", deadline_ms);
    return eddy__cmd_status(x) == EDDY_OK ? EDDY_OK
                                          : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
}

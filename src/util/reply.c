/* SPDX-License-Identifier: BSD-3-Clause */
/* Shape checks over hiredis replies; see reply.h. */
#include "util/reply.h"

#include <stdlib.h>
#include <string.h>

bool eddy__reply_is_str(const redisReply *r) {
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static bool is_str(const redisReply *r) { return eddy__reply_is_str(r); }

const redisReply *eddy__reply_field(const redisReply *rec, const char *name) {
    if (!rec || rec->type != REDIS_REPLY_ARRAY)
        return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i + 1 < rec->elements; i += 2) {
        const redisReply *k = rec->element[i];
        if (is_str(k) && k->len == n && memcmp(k->str, name, n) == 0)
            return rec->element[i + 1];
    }
    return NULL;
}

eddy_status eddy__reply_entries(const redisReply *r) {
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return EDDY_ERR_PROTOCOL;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_ARRAY || e->elements != 2 || !is_str(e->element[0]))
            return EDDY_ERR_PROTOCOL;
        const redisReply *f = e->element[1];
        if (f->type == REDIS_REPLY_NIL)
            continue;
        if (f->type != REDIS_REPLY_ARRAY || f->elements % 2 != 0)
            return EDDY_ERR_PROTOCOL;
    }
    return EDDY_OK;
}

eddy__entry_view eddy__reply_entry(const redisReply *entries, size_t i) {
    const redisReply *e = entries->element[i];
    eddy__entry_view v = {e->element[0]->str, e->element[0]->len, NULL};
    if (e->element[1]->type == REDIS_REPLY_ARRAY)
        v.fields = e->element[1];
    return v;
}

bool eddy__entry_flatten(const redisReply *fields, const char **fv, size_t *fvlen) {
    for (size_t i = 0; i < fields->elements; i++) {
        const redisReply *f = fields->element[i];
        if (!is_str(f))
            return false;
        fv[i] = f->str;
        fvlen[i] = f->len;
    }
    return true;
}

eddy_status eddy__reply_time_ms(const redisReply *r, long long *ms) {
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || !is_str(r->element[0]) ||
        !is_str(r->element[1]))
        return EDDY_ERR_PROTOCOL;
    char *end;
    long long sec = strtoll(r->element[0]->str, &end, 10);
    if (*end)
        return EDDY_ERR_PROTOCOL;
    long long usec = strtoll(r->element[1]->str, &end, 10);
    if (*end)
        return EDDY_ERR_PROTOCOL;
    *ms = sec * 1000 + usec / 1000;
    return EDDY_OK;
}

unsigned eddy__reply_pending_count(const redisReply *r, const char *id) {
    if (!r || r->type != REDIS_REPLY_ARRAY)
        return 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *p = r->element[i];
        if (!p || p->type != REDIS_REPLY_ARRAY || p->elements < 4 || !is_str(p->element[0]) ||
            p->element[3]->type != REDIS_REPLY_INTEGER)
            continue;
        if (strcmp(p->element[0]->str, id) == 0)
            return p->element[3]->integer > 0 ? (unsigned)p->element[3]->integer : 0;
    }
    return 0;
}

redisReply *eddy__reply_nil(void) {
    redisReader *reader = redisReaderCreate();
    if (!reader)
        return NULL;
    void *reply = NULL;
    if (redisReaderFeed(reader, "*-1\r\n", 5) != REDIS_OK ||
        redisReaderGetReply(reader, &reply) != REDIS_OK)
        reply = NULL;
    redisReaderFree(reader);
    return reply;
}

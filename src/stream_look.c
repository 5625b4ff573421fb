/* Telling when the server is behind a subscription; the rules are in stream_look.h. Ids are
 * kept parsed (two integers), so noting a read costs a parse and a comparison. */
#include "stream_look.h"

#include <stdio.h>
#include <string.h>

#include "reply.h"

/* "ms-seq" (or "ms"); false when it is not an id. */
static bool parse_id(const char *s, size_t len, eddy__xid *out) {
    uint64_t v[2] = {0, 0};
    int part = 0;
    bool digit = false;
    for (size_t i = 0; i < len; i++) {
        char ch = s[i];
        if (ch >= '0' && ch <= '9') {
            v[part] = v[part] * 10 + (uint64_t)(ch - '0');
            digit = true;
        } else if (ch == '-' && part == 0 && digit) {
            part = 1;
            digit = false;
        } else {
            return false;
        }
    }
    if (!digit)
        return false;
    out->ms = v[0];
    out->seq = v[1];
    return true;
}

static int cmp_id(eddy__xid a, eddy__xid b) {
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    return a.seq < b.seq ? -1 : a.seq > b.seq;
}

static bool entry_id(const redisReply *entries, size_t i, eddy__xid *out) {
    eddy__entry_view v = eddy__reply_entry(entries, i);
    return parse_id(v.id, v.idlen, out);
}

void eddy__stream_look_read(eddy__stream_look *l, const redisReply *entries) {
    size_t n = entries->elements;
    eddy__xid first, last;
    if (n == 0 || !entry_id(entries, 0, &first) || !entry_id(entries, n - 1, &last))
        return;
    if (cmp_id(first, l->look_id) > 0) {
        l->read_after += n; /* all above it, ascending */
    } else {
        for (size_t i = 0; i < n; i++) {
            eddy__xid x;
            if (entry_id(entries, i, &x) && cmp_id(x, l->look_id) > 0)
                l->read_after++;
        }
    }
    if (cmp_id(last, l->max_read) > 0)
        l->max_read = last;
}

bool eddy__stream_look_feed(eddy__stream_look *l, const redisReply *info,
                            eddy__stream_behind *out) {
    memset(out, 0, sizeof(*out));
    if (!info || info->type != REDIS_REPLY_ARRAY)
        return false;
    const redisReply *last = eddy__reply_field(info, "last-generated-id");
    const redisReply *added = eddy__reply_field(info, "entries-added");
    eddy__xid last_id;
    if (!last || last->type != REDIS_REPLY_STRING || !parse_id(last->str, last->len, &last_id) ||
        !added || added->type != REDIS_REPLY_INTEGER || added->integer < 0)
        return false;
    if (l->looked) {
        out->expected = l->look_added + l->read_after;
        out->added = (uint64_t)added->integer;
        out->lost = out->expected > out->added ? out->expected - out->added : 0;
        out->behind = out->lost > 0 || cmp_id(last_id, l->max_read) < 0;
        snprintf(out->last_id, sizeof(out->last_id), "%llu-%llu", (unsigned long long)last_id.ms,
                 (unsigned long long)last_id.seq);
        snprintf(out->max_read_id, sizeof(out->max_read_id), "%llu-%llu",
                 (unsigned long long)l->max_read.ms, (unsigned long long)l->max_read.seq);
    }
    l->looked = true;
    l->look_id = last_id;
    l->look_added = (uint64_t)added->integer;
    l->read_after = 0;
    l->max_read = last_id; /* the look itself saw this far */
    return true;
}

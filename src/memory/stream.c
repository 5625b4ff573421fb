/* SPDX-License-Identifier: BSD-3-Clause */
/* The stream data structure: an append-only array of entries in id order with binary search,
 * tombstones for deleted entries, and an emulation of Redis's listpack nodes so that
 * approximate ("~") trimming and node-level bookkeeping match a real server. Also stream id
 * parsing and range replies.
 *
 * Invariants:
 * - e[head, n) is sorted by id; e[head] is live whenever length > 0 (leading tombstones are
 *   dropped at once); tombs counts the tombstones in the range, and they are squeezed out when
 *   they outnumber the live entries.
 * - Every live entry belongs to an existing node; a node's live count is the number of its live
 *   entries and sums to length; total (live + deleted) and bytes follow Redis's listpack
 *   accounting, which is why a tombstone whose node still exists keeps counting in total even
 *   after it is physically dropped from the array.
 * - A node is removed when its last live entry is deleted by XDEL, or when trimming removes it
 *   whole; trimming only ever removes nodes from the front. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "memory/internal.h"

#define NODE_MAX_ENTRIES 100 /* Redis's stream-node-max-entries default */
#define NODE_MAX_BYTES 4096  /* Redis's stream-node-max-bytes default */

eddy__mstream *eddy__mstream_new(void) {
    eddy__mstream *s = eddy__mem_calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    eddy__mdict_init(&s->groups);
    s->next_serial = 1;
    return s;
}

void eddy__mstream_free(eddy__mstream *s) {
    if (!s)
        return;
    for (size_t i = s->head; i < s->n; i++)
        eddy__mstream_entry_release(s, &s->e[i]);
    eddy__mem_free(s->chunk);
    eddy__mem_free(s->e);
    for (size_t i = s->nhead; i < s->nn; i++)
        eddy__mem_free(s->nodes[i].master);
    eddy__mem_free(s->nodes);
    eddy__mdict_clear(&s->groups, eddy__mgroup_free);
    eddy__mem_free(s);
}

/* ---- listpack size model ------------------------------------------------------------------ */

static size_t lp_backlen(size_t l) {
    return l <= 127 ? 1 : l < 16383 ? 2 : l < 2097151 ? 3 : l < 268435455 ? 4 : 5;
}

static size_t lp_int_size(int64_t v) {
    size_t l = (v >= 0 && v <= 127)                 ? 1
               : (v >= -4096 && v <= 4095)          ? 2
               : (v >= -32768 && v <= 32767)        ? 3
               : (v >= -8388608 && v <= 8388607)    ? 4
               : (v >= INT32_MIN && v <= INT32_MAX) ? 5
                                                    : 9;
    return l + lp_backlen(l);
}

static size_t lp_str_size(const char *p, size_t len) {
    long long v;
    /* listpacks store integer-looking strings as integers (at most 20 bytes, a sign or a
     * digit first; the test spares most text the parser) */
    if (len && len <= 20 && (p[0] == '-' || (p[0] >= '0' && p[0] <= '9')) &&
        eddy__mparse_ll(p, len, &v))
        return lp_int_size(v);
    size_t l = len < 64 ? 1 + len : len < 4096 ? 2 + len : 5 + len;
    return l + lp_backlen(l);
}

/* ---- packed field-value pairs ------------------------------------------------------------- */

static size_t packed_size(int nstr, const size_t *len, int step) {
    size_t total = (size_t)nstr * sizeof(uint32_t);
    for (int i = 0; i < nstr; i++)
        total += len[i * step];
    return total;
}

static void pack_into(char *data, int nstr, const char **str, const size_t *len, int step) {
    char *p = data + (size_t)nstr * sizeof(uint32_t);
    for (int i = 0; i < nstr; i++) {
        uint32_t l = (uint32_t)len[i * step];
        memcpy(data + (size_t)i * sizeof(uint32_t), &l, sizeof(l));
        memcpy(p, str[i * step], l);
        p += l;
    }
}

static char *pack(int nstr, const char **str, const size_t *len, int step) {
    char *data = eddy__mem_malloc(packed_size(nstr, len, step));
    if (data)
        pack_into(data, nstr, str, len, step);
    return data;
}

/* ---- entry bytes -------------------------------------------------------------------------- */

#define CHUNK_BYTES (16 * 1024)

/* Room for size bytes of a new entry, counted in the chunk it returns in *owner. NULL on OOM
 * with nothing changed (beyond a fresh current chunk). An entry above a quarter of a chunk
 * gets a chunk of its own. */
static char *entry_bytes(eddy__mstream *s, size_t size, eddy__mchunk **owner) {
    eddy__mchunk *ch = s->chunk;
    if (size > CHUNK_BYTES / 4) {
        if (!(ch = eddy__mem_malloc(sizeof(*ch) + size)))
            return NULL;
        *ch = (eddy__mchunk){size, size, 1};
        *owner = ch;
        return ch->data;
    }
    if (!ch || ch->cap - ch->used < size) {
        if (!(ch = eddy__mem_malloc(sizeof(*ch) + CHUNK_BYTES)))
            return NULL;
        *ch = (eddy__mchunk){0, CHUNK_BYTES, 0};
        if (s->chunk && s->chunk->live == 0)
            eddy__mem_free(s->chunk);
        s->chunk = ch;
    }
    char *p = ch->data + ch->used;
    ch->used += size;
    ch->live++;
    *owner = ch;
    return p;
}

void eddy__mstream_entry_release(eddy__mstream *s, eddy__mentry *e) {
    eddy__mchunk *ch = e->chunk;
    e->data = NULL;
    e->chunk = NULL;
    if (!ch || --ch->live > 0)
        return;
    if (ch == s->chunk)
        ch->used = 0; /* the current chunk is filled again from its start */
    else
        eddy__mem_free(ch);
}

/* Walks packed strings: call with *p == NULL first. */
static const char *unpack_next(const char *data, uint32_t nstr, uint32_t i, const char **p,
                               uint32_t *len) {
    memcpy(len, data + (size_t)i * sizeof(uint32_t), sizeof(*len));
    if (!*p)
        *p = data + (size_t)nstr * sizeof(uint32_t);
    const char *s = *p;
    *p += *len;
    return s;
}

static bool same_fields(const eddy__mnode *node, int nfields, const char **fv,
                        const size_t *fvlen) {
    if (node->nmaster != (uint32_t)nfields)
        return false;
    const char *p = NULL;
    for (uint32_t i = 0; i < node->nmaster; i++) {
        uint32_t l;
        const char *f = unpack_next(node->master, node->nmaster, i, &p, &l);
        if (l != fvlen[2 * i] || memcmp(f, fv[2 * i], l) != 0)
            return false;
    }
    return true;
}

/* ---- nodes -------------------------------------------------------------------------------- */

static eddy__mnode *node_find(eddy__mstream *s, uint64_t serial) {
    size_t lo = s->nhead, hi = s->nn;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->nodes[mid].serial < serial)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nn && s->nodes[lo].serial == serial ? &s->nodes[lo] : NULL;
}

static void node_remove(eddy__mstream *s, eddy__mnode *node) {
    size_t i = (size_t)(node - s->nodes);
    eddy__mem_free(node->master);
    if (i == s->nhead) {
        s->nhead++;
    } else {
        memmove(&s->nodes[i], &s->nodes[i + 1], (s->nn - i - 1) * sizeof(*node));
        s->nn--;
    }
    if (s->nhead == s->nn)
        s->nhead = s->nn = 0;
}

static bool node_reserve(eddy__mstream *s) {
    if (s->nn < s->ncap)
        return true;
    if (s->nhead > 0) {
        memmove(s->nodes, &s->nodes[s->nhead], (s->nn - s->nhead) * sizeof(*s->nodes));
        s->nn -= s->nhead;
        s->nhead = 0;
        if (s->nn < s->ncap)
            return true;
    }
    size_t cap = s->ncap ? s->ncap * 2 : 4;
    eddy__mnode *nodes = eddy__mem_realloc(s->nodes, cap * sizeof(*nodes));
    if (!nodes)
        return false;
    s->nodes = nodes;
    s->ncap = cap;
    return true;
}

/* ---- entries ------------------------------------------------------------------------------ */

static bool entry_reserve(eddy__mstream *s) {
    if (s->n < s->cap)
        return true;
    if (s->head > 0 && s->head >= s->n / 4) {
        memmove(s->e, &s->e[s->head], (s->n - s->head) * sizeof(*s->e));
        s->n -= s->head;
        s->head = 0;
        return true;
    }
    size_t cap = s->cap ? s->cap * 2 : 8;
    eddy__mentry *e = eddy__mem_realloc(s->e, cap * sizeof(*e));
    if (!e)
        return false;
    s->e = e;
    s->cap = cap;
    return true;
}

/* Drops leading tombstones, squeezes out tombstones when they dominate, and gives memory back
 * when the array is mostly empty. Never fails: shrinking is best effort. */
static void normalize(eddy__mstream *s) {
    while (s->head < s->n && s->e[s->head].deleted) {
        s->head++;
        s->tombs--;
    }
    if (s->head == s->n) {
        s->head = s->n = 0;
        s->tombs = 0;
    }
    if (s->tombs > 64 && s->tombs > s->length) {
        size_t out = s->head;
        for (size_t i = s->head; i < s->n; i++)
            if (!s->e[i].deleted)
                s->e[out++] = s->e[i];
        s->n = out;
        s->tombs = 0;
    }
    size_t used = s->n - s->head;
    if (s->cap > 64 && used < s->cap / 4) {
        memmove(s->e, &s->e[s->head], used * sizeof(*s->e));
        s->head = 0;
        s->n = used;
        eddy__mentry *e = eddy__mem_realloc(s->e, (s->cap / 2) * sizeof(*e));
        if (e) {
            s->e = e;
            s->cap /= 2;
        }
    }
    s->first_id = s->length ? s->e[s->head].id : (eddy__mid){0, 0};
}

int eddy__mstream_append(eddy__mstream *s, eddy__mid id, int nfields, const char **fv,
                         const size_t *fvlen) {
    eddy__mentry entry = {id, 0, (uint32_t)nfields, false, NULL, NULL};
    if (!(entry.data = entry_bytes(s, packed_size(2 * nfields, fvlen, 1), &entry.chunk)))
        return -1;
    pack_into(entry.data, 2 * nfields, fv, fvlen, 1);
    size_t totelelen = 0;
    for (int i = 0; i < 2 * nfields; i++)
        totelelen += fvlen[i];
    eddy__mnode *tail = s->nn > s->nhead ? &s->nodes[s->nn - 1] : NULL;
    bool new_node =
        !tail || tail->bytes + totelelen >= NODE_MAX_BYTES || tail->total >= NODE_MAX_ENTRIES;
    char *master = NULL;
    if (new_node) {
        master = pack(nfields, fv, fvlen, 2);
        if (!master || !node_reserve(s)) {
            eddy__mem_free(master);
            eddy__mstream_entry_release(s, &entry);
            return -1;
        }
    }
    if (!entry_reserve(s)) {
        eddy__mem_free(master);
        eddy__mstream_entry_release(s, &entry);
        return -1;
    }
    if (new_node) {
        /* listpack header and end byte, then the master entry: count, deleted, num-fields,
         * the field names and a zero terminator. */
        size_t bytes = 7 + lp_int_size(1) + lp_int_size(0) + lp_int_size(nfields) + lp_int_size(0);
        for (int i = 0; i < nfields; i++)
            bytes += lp_str_size(fv[2 * i], fvlen[2 * i]);
        s->nodes[s->nn++] = (eddy__mnode){
            .serial = s->next_serial++,
            .bytes = bytes,
            .master_id = id,
            .nmaster = (uint32_t)nfields,
            .master = master,
        };
        tail = &s->nodes[s->nn - 1];
    }
    bool same = same_fields(tail, nfields, fv, fvlen);
    size_t bytes = lp_int_size(0) /* flags */ + lp_int_size((int64_t)(id.ms - tail->master_id.ms)) +
                   lp_int_size((int64_t)(id.seq - tail->master_id.seq));
    for (int i = 0; i < nfields; i++) {
        if (!same)
            bytes += lp_str_size(fv[2 * i], fvlen[2 * i]);
        bytes += lp_str_size(fv[2 * i + 1], fvlen[2 * i + 1]);
    }
    if (!same)
        bytes += lp_int_size(nfields);
    bytes += lp_int_size(same ? nfields + 3 : 2 * nfields + 4); /* lp-count */
    tail->bytes += bytes;
    tail->live++;
    tail->total++;
    tail->last_id = id;

    entry.node = tail->serial;
    s->e[s->n++] = entry;
    s->length++;
    s->entries_added++;
    s->last_id = id;
    if (s->length == 1)
        s->first_id = id;
    return 0;
}

size_t eddy__mstream_lower_bound(const eddy__mstream *s, eddy__mid id) {
    size_t lo = s->head, hi = s->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (eddy__mid_cmp(s->e[mid].id, id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* First position with an id greater than the given one. */
static size_t upper_bound(const eddy__mstream *s, eddy__mid id) {
    if (id.ms == UINT64_MAX && id.seq == UINT64_MAX)
        return s->n;
    eddy__mid next = id;
    eddy__mid_incr(&next);
    return eddy__mstream_lower_bound(s, next);
}

eddy__mentry *eddy__mstream_get(eddy__mstream *s, eddy__mid id) {
    size_t i = eddy__mstream_lower_bound(s, id);
    if (i < s->n && !s->e[i].deleted && eddy__mid_cmp(s->e[i].id, id) == 0)
        return &s->e[i];
    return NULL;
}

/* Turns a live entry into a tombstone and books it in its node. */
static void entry_kill(eddy__mstream *s, eddy__mentry *e, eddy__mnode *node) {
    eddy__mstream_entry_release(s, e);
    e->deleted = true;
    s->length--;
    s->tombs++;
    if (node)
        node->live--;
}

bool eddy__mstream_delete(eddy__mstream *s, eddy__mid id) {
    eddy__mentry *e = eddy__mstream_get(s, id);
    if (!e)
        return false;
    eddy__mnode *node = node_find(s, e->node);
    entry_kill(s, e, node);
    if (node && node->live == 0)
        node_remove(s, node); /* Redis frees a listpack whose last live entry goes */
    normalize(s);
    return true;
}

bool eddy__mstream_last_live(const eddy__mstream *s, eddy__mid *out) {
    for (size_t i = s->n; i > s->head; i--) {
        if (!s->e[i - 1].deleted) {
            *out = s->e[i - 1].id;
            return true;
        }
    }
    return false;
}

long long eddy__mstream_trim(eddy__mstream *s, const eddy__mtrim *t) {
    if (t->strategy == EDDY__TRIM_NONE)
        return 0;
    bool maxlen = t->strategy == EDDY__TRIM_MAXLEN;
    long long deleted = 0;
    while (s->nhead < s->nn) {
        eddy__mnode *node = &s->nodes[s->nhead];
        if (maxlen && (long long)s->length <= t->maxlen)
            break;
        long long entries = (long long)node->live;
        if (t->limit && deleted + entries > t->limit)
            break;
        bool remove_node = maxlen ? (long long)s->length - entries >= t->maxlen
                                  : eddy__mid_cmp(node->last_id, t->minid) < 0;
        if (remove_node) {
            while (s->head < s->n &&
                   (s->e[s->head].node <= node->serial || s->e[s->head].deleted)) {
                eddy__mentry *e = &s->e[s->head++];
                if (e->deleted) {
                    s->tombs--;
                } else {
                    eddy__mstream_entry_release(s, e);
                    s->length--;
                }
            }
            deleted += entries;
            node_remove(s, node);
            continue;
        }
        if (t->approx)
            break;
        /* Exact trimming marks entries of the first node deleted, one by one. */
        for (size_t i = s->head; i < s->n; i++) {
            eddy__mentry *e = &s->e[i];
            if (e->node != node->serial) {
                if (e->deleted)
                    continue;
                break;
            }
            if (maxlen ? (long long)s->length <= t->maxlen : eddy__mid_cmp(e->id, t->minid) >= 0)
                break;
            if (e->deleted)
                continue;
            entry_kill(s, e, node);
            deleted++;
        }
        break;
    }
    normalize(s);
    return deleted;
}

/* ---- replies ------------------------------------------------------------------------------ */

void eddy__mstream_reply_entry(eddy__mresp *out, const eddy__mentry *e) {
    eddy__mresp_array(out, 2);
    eddy__mresp_id(out, e->id.ms, e->id.seq);
    eddy__mresp_array(out, 2 * (size_t)e->nfields);
    const char *p = NULL;
    for (uint32_t i = 0; i < 2 * e->nfields; i++) {
        uint32_t l;
        const char *str = unpack_next(e->data, 2 * e->nfields, i, &p, &l);
        eddy__mresp_bulk(out, str, l);
    }
}

size_t eddy__mstream_reply_range(eddy__mresp *out, eddy__mstream *s, eddy__mid start, eddy__mid end,
                                 size_t count, bool rev) {
    size_t mark = eddy__mresp_defer(out);
    size_t n = 0;
    if (eddy__mid_cmp(start, end) <= 0) {
        if (!rev) {
            for (size_t i = eddy__mstream_lower_bound(s, start); i < s->n && !out->oom; i++) {
                const eddy__mentry *e = &s->e[i];
                if (eddy__mid_cmp(e->id, end) > 0)
                    break;
                if (e->deleted)
                    continue;
                eddy__mstream_reply_entry(out, e);
                if (++n == count)
                    break;
            }
        } else {
            for (size_t i = upper_bound(s, end); i > s->head && !out->oom; i--) {
                const eddy__mentry *e = &s->e[i - 1];
                if (eddy__mid_cmp(e->id, start) < 0)
                    break;
                if (e->deleted)
                    continue;
                eddy__mstream_reply_entry(out, e);
                if (++n == count)
                    break;
            }
        }
    }
    eddy__mresp_set_array(out, mark, n);
    return n;
}

/* ---- ids ---------------------------------------------------------------------------------- */

/* Redis's string2ull: strict decimal first, then strtoull's looser rules. */
static bool parse_ull(const char *s, unsigned long long *out) {
    long long ll;
    if (eddy__mparse_ll(s, strlen(s), &ll)) {
        if (ll < 0)
            return false;
        *out = (unsigned long long)ll;
        return true;
    }
    errno = 0;
    char *end = NULL;
    *out = strtoull(s, &end, 10);
    return !(errno == EINVAL || errno == ERANGE || !(*s != '\0' && *end == '\0'));
}

/* Digits only, at most 19 of them (so no overflow), read into *v. */
static bool short_decimal(const char *s, size_t len, uint64_t *v) {
    if (len == 0 || len > 19)
        return false;
    uint64_t x = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

/* The common spelling "<ms>-<seq>" in plain digits, which every rule below reads the same way
 * (leading zeros included); anything else takes the general path. */
static bool parse_plain_id(const char *s, size_t len, eddy__mid *id) {
    const char *dash = memchr(s, '-', len);
    if (!dash)
        return false;
    size_t mlen = (size_t)(dash - s);
    uint64_t ms, seq;
    if (!short_decimal(s, mlen, &ms) || !short_decimal(dash + 1, len - mlen - 1, &seq))
        return false;
    *id = (eddy__mid){ms, seq};
    return true;
}

bool eddy__mparse_id(const char *s, size_t len, eddy__mid *id, uint64_t missing_seq, bool strict,
                     bool *seq_given) {
    if (parse_plain_id(s, len, id)) {
        if (seq_given)
            *seq_given = true;
        return true;
    }
    char buf[128];
    if (len > sizeof(buf) - 1)
        return false;
    memcpy(buf, s, len);
    buf[len] = '\0';
    if (strict && (buf[0] == '-' || buf[0] == '+') && buf[1] == '\0')
        return false;
    if (seq_given)
        *seq_given = true;
    if (buf[0] == '-' && buf[1] == '\0') {
        *id = (eddy__mid){0, 0};
        return true;
    }
    if (buf[0] == '+' && buf[1] == '\0') {
        *id = EDDY__MID_MAX;
        return true;
    }
    unsigned long long ms, seq;
    char *dot = strchr(buf, '-');
    if (dot)
        *dot = '\0';
    if (!parse_ull(buf, &ms))
        return false;
    if (dot) {
        if (seq_given && dot[1] == '*' && dot[2] == '\0') {
            seq = 0;
            *seq_given = false;
        } else if (!parse_ull(dot + 1, &seq)) {
            return false;
        }
    } else {
        seq = missing_seq;
    }
    *id = (eddy__mid){ms, seq};
    return true;
}

bool eddy__mctx_id(eddy__mctx *c, int i, eddy__mid *id, uint64_t missing_seq, bool strict) {
    if (eddy__mparse_id(ARG(c, i), ARGLEN(c, i), id, missing_seq, strict, NULL))
        return true;
    eddy__mctx_error(c, "ERR Invalid stream ID specified as stream command argument");
    return false;
}

bool eddy__mctx_interval_id(eddy__mctx *c, int i, eddy__mid *id, bool *exclusive,
                            uint64_t missing_seq) {
    const char *s = ARG(c, i);
    size_t len = ARGLEN(c, i);
    *exclusive = len > 1 && s[0] == '(';
    bool ok = *exclusive ? eddy__mparse_id(s + 1, len - 1, id, missing_seq, true, NULL)
                         : eddy__mparse_id(s, len, id, missing_seq, false, NULL);
    if (!ok)
        eddy__mctx_error(c, "ERR Invalid stream ID specified as stream command argument");
    return ok;
}

bool eddy__mid_incr(eddy__mid *id) {
    if (id->seq == UINT64_MAX) {
        if (id->ms == UINT64_MAX)
            return false;
        id->ms++;
        id->seq = 0;
    } else {
        id->seq++;
    }
    return true;
}

bool eddy__mid_decr(eddy__mid *id) {
    if (id->seq == 0) {
        if (id->ms == 0)
            return false;
        id->ms--;
        id->seq = UINT64_MAX;
    } else {
        id->seq--;
    }
    return true;
}

eddy__mobj *eddy__mstream_find(eddy__mctx *c, int keyarg, bool *wrongtype) {
    return eddy__mkey_find_typed(c, ARG(c, keyarg), ARGLEN(c, keyarg), EDDY__MT_STREAM, wrongtype);
}

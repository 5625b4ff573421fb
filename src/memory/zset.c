/* SPDX-License-Identifier: BSD-3-Clause */
/* Sorted sets: a table from member to item for O(1) lookups, and a skip list of the same items
 * ordered by (score, member) for ranges. Commands: ZADD (NX, XX, GT, LT, CH, INCR), ZREM,
 * ZRANGEBYSCORE (WITHSCORES, LIMIT), ZREMRANGEBYSCORE, ZSCORE, ZCARD.
 *
 * Invariants: every item is in both structures; an item's score changes only while it is
 * unlinked from the list; -0 is stored as 0 (Redis replies "0" for it); a zset key never
 * exists empty. */
#include <math.h>
#include <string.h>

#include "memory/internal.h"

typedef struct zitem {
    double score;
    size_t len;
    char member[];
} zitem;

struct eddy__mzset {
    eddy__mdict dict; /* member -> zitem* */
    eddy__mskl list;  /* zitem* by (score, member) */
};

static int zitem_cmp(const void *a, const void *b) {
    const zitem *x = a, *y = b;
    if (x->score != y->score)
        return x->score < y->score ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int r = memcmp(x->member, y->member, n);
    if (r)
        return r;
    return x->len < y->len ? -1 : x->len > y->len;
}

eddy__mzset *eddy__mzset_new(void) {
    eddy__mzset *z = eddy__mem_malloc(sizeof(*z));
    if (!z)
        return NULL;
    eddy__mdict_init(&z->dict);
    eddy__mskl_init(&z->list, zitem_cmp);
    return z;
}

void eddy__mzset_free(eddy__mzset *z) {
    if (!z)
        return;
    eddy__mskl_clear(&z->list, NULL);
    eddy__mdict_clear(&z->dict, eddy__mem_free);
    eddy__mem_free(z);
}

size_t eddy__mzset_card(const eddy__mzset *z) { return z->list.len; }

typedef struct range {
    double min, max;
    bool minex, maxex;
} range;

static bool score_before(const void *item, const void *arg) {
    const zitem *it = item;
    const range *r = arg;
    return it->score < r->min || (r->minex && it->score == r->min);
}

static bool below_max(const range *r, double score) {
    return r->maxex ? score < r->max : score <= r->max;
}

static bool range_empty(const range *r) {
    return r->min > r->max || (r->min == r->max && (r->minex || r->maxex));
}

static bool parse_range(eddy__mctx *c, int i, range *r) {
    if (!eddy__mparse_score_bound(ARG(c, i), ARGLEN(c, i), &r->min, &r->minex) ||
        !eddy__mparse_score_bound(ARG(c, i + 1), ARGLEN(c, i + 1), &r->max, &r->maxex)) {
        eddy__mctx_error(c, "ERR min or max is not a float");
        return false;
    }
    return true;
}

static void item_remove(eddy__mzset *z, zitem *it) {
    eddy__mskl_remove(&z->list, it);
    eddy__mdict_del(&z->dict, it->member, it->len, NULL);
    eddy__mem_free(it);
}

enum { Z_NX = 1, Z_XX = 2, Z_GT = 4, Z_LT = 8, Z_INCR = 16 };
/* Z_SAME: the member was processed but its score did not change (counts for INCR's reply). */
enum { Z_ADDED, Z_UPDATED, Z_SAME, Z_NOP, Z_NAN, Z_OOM };

static int zset_add(eddy__mzset *z, double score, const char *member, size_t len, int flags,
                    double *newscore) {
    eddy__mdict_entry *e = eddy__mdict_find(&z->dict, member, len);
    if (e) {
        zitem *it = e->val;
        if (flags & Z_NX)
            return Z_NOP;
        if (flags & Z_INCR) {
            score += it->score;
            if (isnan(score))
                return Z_NAN;
        }
        if (((flags & Z_LT) && score >= it->score) || ((flags & Z_GT) && score <= it->score))
            return Z_NOP;
        if (score == 0)
            score = 0; /* -0 */
        *newscore = score;
        if (score == it->score)
            return Z_SAME;
        eddy__mskl_node *n = eddy__mskl_unlink(&z->list, it);
        it->score = score;
        eddy__mskl_relink(&z->list, n);
        return Z_UPDATED;
    }
    if (flags & Z_XX)
        return Z_NOP;
    if (score == 0)
        score = 0;
    zitem *it = eddy__mem_malloc(sizeof(*it) + len);
    if (!it)
        return Z_OOM;
    it->score = score;
    it->len = len;
    memcpy(it->member, member, len);
    if (eddy__mdict_add(&z->dict, member, len, it, NULL) != 1) {
        eddy__mem_free(it);
        return Z_OOM;
    }
    if (eddy__mskl_insert(&z->list, it) != 0) {
        eddy__mdict_del(&z->dict, member, len, NULL);
        eddy__mem_free(it);
        return Z_OOM;
    }
    *newscore = score;
    return Z_ADDED;
}

void eddy__mcmd_zadd(eddy__mctx *c) {
    int flags = 0;
    bool ch = false;
    int scoreidx = 2;
    for (; scoreidx < c->argc; scoreidx++) {
        if (ARGIS(c, scoreidx, "nx"))
            flags |= Z_NX;
        else if (ARGIS(c, scoreidx, "xx"))
            flags |= Z_XX;
        else if (ARGIS(c, scoreidx, "ch"))
            ch = true;
        else if (ARGIS(c, scoreidx, "incr"))
            flags |= Z_INCR;
        else if (ARGIS(c, scoreidx, "gt"))
            flags |= Z_GT;
        else if (ARGIS(c, scoreidx, "lt"))
            flags |= Z_LT;
        else
            break;
    }
    int elements = c->argc - scoreidx;
    if (elements % 2 || !elements) {
        eddy__mctx_err_syntax(c);
        return;
    }
    elements /= 2;
    if ((flags & Z_NX) && (flags & Z_XX)) {
        eddy__mctx_error(c, "ERR XX and NX options at the same time are not compatible");
        return;
    }
    if (((flags & Z_GT) && (flags & Z_NX)) || ((flags & Z_LT) && (flags & Z_NX)) ||
        ((flags & Z_GT) && (flags & Z_LT))) {
        eddy__mctx_error(c, "ERR GT, LT, and/or NX options at the same time are not compatible");
        return;
    }
    if ((flags & Z_INCR) && elements > 1) {
        eddy__mctx_error(c, "ERR INCR option supports a single increment-element pair");
        return;
    }
    for (int j = 0; j < elements; j++) {
        double d;
        if (!eddy__mparse_double(ARG(c, scoreidx + 2 * j), ARGLEN(c, scoreidx + 2 * j), &d)) {
            eddy__mctx_error(c, "ERR value is not a valid float");
            return;
        }
    }
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    long long added = 0, updated = 0, processed = 0;
    double score = 0;
    if (!o && !(flags & Z_XX) && !(o = eddy__mkey_add(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET))) {
        eddy__mctx_oom(c);
        return;
    }
    for (int j = 0; o && j < elements; j++) {
        double d = 0;
        eddy__mparse_double(ARG(c, scoreidx + 2 * j), ARGLEN(c, scoreidx + 2 * j), &d);
        int r = zset_add(o->v.zset, d, ARG(c, scoreidx + 2 * j + 1),
                         ARGLEN(c, scoreidx + 2 * j + 1), flags, &score);
        if (r == Z_NAN || r == Z_OOM) {
            if (eddy__mzset_card(o->v.zset) == 0)
                eddy__mkey_delete(c, o);
            if (r == Z_NAN)
                eddy__mctx_error(c, "ERR resulting score is not a number (NaN)");
            else
                eddy__mctx_oom(c);
            return;
        }
        if (r == Z_ADDED)
            added++;
        if (r == Z_UPDATED)
            updated++;
        if (r != Z_NOP)
            processed++;
        if (r == Z_ADDED || r == Z_UPDATED)
            c->dirty = true;
    }
    if (o && eddy__mzset_card(o->v.zset) == 0)
        eddy__mkey_delete(c, o);
    if (flags & Z_INCR) {
        if (processed)
            eddy__mresp_double(c->out, score);
        else
            eddy__mresp_nil(c->out);
    } else {
        eddy__mresp_int(c->out, ch ? added + updated : added);
    }
}

void eddy__mcmd_zrem(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    long long removed = 0;
    for (int i = 2; o && i < c->argc; i++) {
        eddy__mdict_entry *e = eddy__mdict_find(&o->v.zset->dict, ARG(c, i), ARGLEN(c, i));
        if (!e)
            continue;
        item_remove(o->v.zset, e->val);
        removed++;
        c->dirty = true;
        if (eddy__mzset_card(o->v.zset) == 0) {
            eddy__mkey_delete(c, o);
            break;
        }
    }
    eddy__mresp_int(c->out, removed);
}

void eddy__mcmd_zrangebyscore(eddy__mctx *c) {
    bool withscores = false;
    long long offset = 0, limit = -1;
    for (int j = 4; j < c->argc; j++) {
        int left = c->argc - j - 1;
        if (ARGIS(c, j, "withscores")) {
            withscores = true;
        } else if (ARGIS(c, j, "limit") && left >= 2) {
            if (!eddy__mctx_ll(c, j + 1, &offset, NULL) || !eddy__mctx_ll(c, j + 2, &limit, NULL))
                return;
            j += 2;
        } else {
            eddy__mctx_err_syntax(c);
            return;
        }
    }
    range r;
    if (!parse_range(c, 2, &r))
        return;
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    size_t mark = eddy__mresp_defer(c->out);
    size_t n = 0;
    if (o && !range_empty(&r) && offset >= 0) {
        eddy__mskl_node *node = eddy__mskl_seek(&o->v.zset->list, score_before, &r);
        while (node && offset > 0 && below_max(&r, ((zitem *)node->item)->score)) {
            node = eddy__mskl_next(node);
            offset--;
        }
        for (; node && limit != 0; node = eddy__mskl_next(node)) {
            const zitem *it = node->item;
            if (!below_max(&r, it->score))
                break;
            eddy__mresp_bulk(c->out, it->member, it->len);
            if (withscores)
                eddy__mresp_double(c->out, it->score);
            n++;
            if (limit > 0)
                limit--;
        }
    }
    eddy__mresp_set_array(c->out, mark, withscores ? 2 * n : n);
}

void eddy__mcmd_zremrangebyscore(eddy__mctx *c) {
    range r;
    if (!parse_range(c, 2, &r))
        return;
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    long long removed = 0;
    if (o && !range_empty(&r)) {
        eddy__mskl_node *node = eddy__mskl_seek(&o->v.zset->list, score_before, &r);
        while (node && below_max(&r, ((zitem *)node->item)->score)) {
            eddy__mskl_node *next = eddy__mskl_next(node);
            item_remove(o->v.zset, node->item);
            removed++;
            node = next;
        }
        if (removed)
            c->dirty = true;
        if (eddy__mzset_card(o->v.zset) == 0)
            eddy__mkey_delete(c, o);
    }
    eddy__mresp_int(c->out, removed);
}

void eddy__mcmd_zscore(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    eddy__mdict_entry *e = o ? eddy__mdict_find(&o->v.zset->dict, ARG(c, 2), ARGLEN(c, 2)) : NULL;
    if (!e)
        eddy__mresp_nil(c->out);
    else
        eddy__mresp_double(c->out, ((zitem *)e->val)->score);
}

void eddy__mcmd_zcard(eddy__mctx *c) {
    bool wrongtype;
    eddy__mobj *o = eddy__mkey_find_typed(c, ARG(c, 1), ARGLEN(c, 1), EDDY__MT_ZSET, &wrongtype);
    if (wrongtype)
        return;
    eddy__mresp_int(c->out, o ? (long long)eddy__mzset_card(o->v.zset) : 0);
}

/* ---- for native functions ------------------------------------------------------------------ */

int eddy__mzset_put(eddy__mzset *z, double score, const char *member, size_t len) {
    double ignored;
    return zset_add(z, score, member, len, 0, &ignored) == Z_OOM ? -1 : 0;
}

bool eddy__mzset_score(const eddy__mzset *z, const char *member, size_t len, double *out) {
    eddy__mdict_entry *e = eddy__mdict_find(&z->dict, member, len);
    if (e)
        *out = ((const zitem *)e->val)->score;
    return e != NULL;
}

bool eddy__mzset_remove(eddy__mzset *z, const char *member, size_t len) {
    eddy__mdict_entry *e = eddy__mdict_find(&z->dict, member, len);
    if (e)
        item_remove(z, e->val);
    return e != NULL;
}

size_t eddy__mzset_pop_upto(eddy__mzset *z, double max, size_t limit,
                            void (*each)(const char *member, size_t len, void *user), void *user) {
    size_t n = 0;
    eddy__mskl_node *node;
    while (n < limit && (node = eddy__mskl_first(&z->list)) &&
           ((zitem *)node->item)->score <= max) {
        zitem *it = node->item;
        each(it->member, it->len, user);
        item_remove(z, it);
        n++;
    }
    return n;
}

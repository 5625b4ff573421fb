/* SPDX-License-Identifier: BSD-3-Clause */
/* Filters of reads across the store and of live events; see eddy/filter.h.
 *
 * Filtering happens on the client, after a page is read, and not in Redis: a stream entry is
 * a flat list of fields with no index, so the server could only do the same scan (in Lua,
 * holding up every other client while it runs) and would still have to ship the page's
 * positions back for the reader to advance. Conditions on the event's data need a reader of
 * the data's encoding, which only the client has. So a page is bounded by the entries it
 * examines, and the filter decides which of them reach the caller.
 *
 * Invariants: a types filter holds its strings sorted and without duplicates, so matching is a
 * binary search; everything a filter needs to match is prepared when it is built (time bounds
 * parsed, paths checked, condition values normalised), so matching never allocates and a
 * filter never changes after it is built. Whether a filter needs a data reader is decided
 * from the whole tree before any event is looked at, so the answer does not depend on which
 * branch an event happens to take.
 *
 * Ordering beyond the header's rules: false < true; nil equals nil (so LE and GE hold); a NaN
 * is neither equal to, less nor greater than any number. */
#include "events/filter.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- fields --------------------------------------------------------------------------- */

eddy_field eddy_field_nil(void) {
    eddy_field f = {.kind = EDDY_FIELD_NIL};
    return f;
}

eddy_field eddy_field_bool(bool b) {
    eddy_field f = {.kind = EDDY_FIELD_BOOL, .b = b};
    return f;
}

eddy_field eddy_field_int(int64_t i) {
    eddy_field f = {.kind = EDDY_FIELD_INT, .i = i};
    return f;
}

eddy_field eddy_field_double(double d) {
    eddy_field f = {.kind = EDDY_FIELD_DOUBLE, .d = d};
    return f;
}

eddy_field eddy_field_string(const char *s) {
    if (!s)
        return eddy_field_nil();
    eddy_field f = {.kind = EDDY_FIELD_STRING, .s = s, .len = strlen(s)};
    return f;
}

/* ---- comparing ------------------------------------------------------------------------ */

typedef enum order { ORD_LT, ORD_EQ, ORD_GT, ORD_NONE } order;

#define TWO_63 9223372036854775808.0 /* 2^63, exact as a double */
#define TWO_64 18446744073709551616.0

static order ord_of(int c) { return c < 0 ? ORD_LT : c > 0 ? ORD_GT : ORD_EQ; }

/* Exact comparison of an integer with a double: converting the integer to double would round
 * (2^53 + 1 would equal 2^53). */
static order cmp_int_double(int64_t i, double d) {
    if (d != d)
        return ORD_NONE;
    if (d >= TWO_63)
        return ORD_LT;
    if (d < -TWO_63)
        return ORD_GT;
    int64_t t = (int64_t)d; /* in range: truncates toward zero */
    if (i != t)
        return i < t ? ORD_LT : ORD_GT;
    double frac = d - (double)t; /* exact: t is d without its fraction */
    return frac > 0 ? ORD_LT : frac < 0 ? ORD_GT : ORD_EQ;
}

/* u is above INT64_MAX. */
static order cmp_uint_double(uint64_t u, double d) {
    if (d != d)
        return ORD_NONE;
    if (d >= TWO_64)
        return ORD_LT;
    if (d < TWO_63)
        return ORD_GT;
    uint64_t t = (uint64_t)d; /* doubles this large are integers */
    return u < t ? ORD_LT : u > t ? ORD_GT : ORD_EQ;
}

static order flip(order o) { return o == ORD_LT ? ORD_GT : o == ORD_GT ? ORD_LT : o; }

static bool is_number(eddy_field_kind k) {
    return k == EDDY_FIELD_INT || k == EDDY_FIELD_UINT || k == EDDY_FIELD_DOUBLE;
}

/* A UINT at or below INT64_MAX (a user reader may give one) is the same number as an INT. */
static eddy_field normalise(eddy_field f) {
    if (f.kind == EDDY_FIELD_UINT && f.u <= INT64_MAX) {
        f.kind = EDDY_FIELD_INT;
        f.i = (int64_t)f.u;
    }
    return f;
}

static order cmp_numbers(eddy_field a, eddy_field b) {
    switch (a.kind) {
    case EDDY_FIELD_INT:
        if (b.kind == EDDY_FIELD_INT)
            return a.i < b.i ? ORD_LT : a.i > b.i ? ORD_GT : ORD_EQ;
        if (b.kind == EDDY_FIELD_UINT)
            return ORD_LT;
        return cmp_int_double(a.i, b.d);
    case EDDY_FIELD_UINT:
        if (b.kind == EDDY_FIELD_UINT)
            return a.u < b.u ? ORD_LT : a.u > b.u ? ORD_GT : ORD_EQ;
        if (b.kind == EDDY_FIELD_INT)
            return ORD_GT;
        return cmp_uint_double(a.u, b.d);
    default: /* DOUBLE */
        if (b.kind != EDDY_FIELD_DOUBLE)
            return flip(cmp_numbers(b, a));
        if (a.d != a.d || b.d != b.d)
            return ORD_NONE;
        return a.d < b.d ? ORD_LT : a.d > b.d ? ORD_GT : ORD_EQ;
    }
}

/* Orders a field a reader found against a condition's value. */
static order compare(eddy_field a, eddy_field b) {
    a = normalise(a);
    b = normalise(b);
    if (is_number(a.kind) && is_number(b.kind))
        return cmp_numbers(a, b);
    if (a.kind != b.kind)
        return ORD_NONE;
    switch (a.kind) {
    case EDDY_FIELD_NIL:
        return ORD_EQ;
    case EDDY_FIELD_BOOL:
        return ord_of((int)a.b - (int)b.b);
    case EDDY_FIELD_STRING: {
        if ((!a.s && a.len) || (!b.s && b.len))
            return ORD_NONE; /* a reader's broken string: treat as not a scalar */
        size_t n = a.len < b.len ? a.len : b.len;
        int c = n ? memcmp(a.s, b.s, n) : 0;
        if (c == 0)
            c = (a.len > b.len) - (a.len < b.len);
        return ord_of(c);
    }
    default: /* OTHER, or a kind no reader should give */
        return ORD_NONE;
    }
}

static bool apply(eddy_data_op op, bool found, const eddy_field *field, const eddy_field *value) {
    if (op == EDDY_DATA_EXISTS)
        return found;
    if (!found)
        return op == EDDY_DATA_NE;
    order o = compare(*field, *value);
    switch (op) {
    case EDDY_DATA_EQ:
        return o == ORD_EQ;
    case EDDY_DATA_NE:
        return o != ORD_EQ;
    case EDDY_DATA_LT:
        return o == ORD_LT;
    case EDDY_DATA_LE:
        return o == ORD_LT || o == ORD_EQ;
    case EDDY_DATA_GT:
        return o == ORD_GT;
    case EDDY_DATA_GE:
        return o == ORD_GT || o == ORD_EQ;
    default:
        return false;
    }
}

/* ---- building ------------------------------------------------------------------------- */

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static eddy_filter *leaf(eddy__filter_kind kind) {
    eddy_filter *f = calloc(1, sizeof(*f));
    if (f) {
        f->kind = kind;
        f->depth = 1;
    }
    return f;
}

eddy_filter *eddy_filter_types(const char *const *types, size_t n) {
    if (n && !types)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!types[i])
            return NULL;
    eddy_filter *f = leaf(EDDY__FILTER_TYPES);
    if (!f)
        return NULL;
    if (n && !(f->u.types.v = calloc(n, sizeof(char *)))) {
        free(f);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(f->u.types.v[i] = strdup(types[i]))) {
            f->u.types.n = i;
            eddy_filter_free(f);
            return NULL;
        }
    }
    f->u.types.n = n;
    if (n > 1) {
        qsort(f->u.types.v, n, sizeof(char *), str_cmp);
        size_t out = 1;
        for (size_t i = 1; i < n; i++) {
            if (strcmp(f->u.types.v[out - 1], f->u.types.v[i]) == 0)
                free(f->u.types.v[i]);
            else
                f->u.types.v[out++] = f->u.types.v[i];
        }
        f->u.types.n = out;
    }
    return f;
}

eddy_filter *eddy_filter_type(const char *type) {
    if (!type)
        return NULL;
    return eddy_filter_types(&type, 1);
}

static eddy_filter *string_filter(eddy__filter_kind kind, const char *s) {
    if (!s)
        return NULL;
    eddy_filter *f = leaf(kind);
    if (f && !(f->u.str = strdup(s))) {
        free(f);
        return NULL;
    }
    return f;
}

eddy_filter *eddy_filter_source(const char *source) {
    return string_filter(EDDY__FILTER_SOURCE, source);
}

eddy_filter *eddy_filter_subject(const char *subject) {
    return string_filter(EDDY__FILTER_SUBJECT, subject);
}

eddy_filter *eddy_filter_time_range(const char *from, const char *to) {
    eddy__instant a = {0, 0}, b = {0, 0};
    if ((from && !eddy__rfc3339_parse(from, &a)) || (to && !eddy__rfc3339_parse(to, &b)))
        return NULL;
    eddy_filter *f = leaf(EDDY__FILTER_TIME);
    if (!f)
        return NULL;
    f->u.time.has_from = from != NULL;
    f->u.time.has_to = to != NULL;
    f->u.time.from = a;
    f->u.time.to = b;
    return f;
}

static bool path_ok(const char *path) {
    if (!path || !*path)
        return false;
    for (const char *p = path; *p; p++)
        if (*p == '.' && (p == path || p[-1] == '.' || p[1] == '\0'))
            return false;
    return true;
}

/* Copies a condition's value into dst, owning a string's bytes. False on bad value or OOM. */
static bool copy_value(eddy_field *dst, const eddy_field *src) {
    eddy_field v = normalise(*src);
    switch (v.kind) {
    case EDDY_FIELD_NIL:
        *dst = eddy_field_nil();
        return true;
    case EDDY_FIELD_BOOL:
        *dst = eddy_field_bool(v.b);
        return true;
    case EDDY_FIELD_INT:
        *dst = eddy_field_int(v.i);
        return true;
    case EDDY_FIELD_UINT:
        *dst = (eddy_field){.kind = EDDY_FIELD_UINT, .u = v.u};
        return true;
    case EDDY_FIELD_DOUBLE:
        *dst = eddy_field_double(v.d);
        return true;
    case EDDY_FIELD_STRING: {
        if ((!v.s && v.len) || v.len == SIZE_MAX)
            return false;
        char *s = malloc(v.len + 1);
        if (!s)
            return false;
        if (v.len)
            memcpy(s, v.s, v.len);
        s[v.len] = '\0';
        *dst = (eddy_field){.kind = EDDY_FIELD_STRING, .s = s, .len = v.len};
        return true;
    }
    default: /* OTHER is not a value to compare with */
        return false;
    }
}

eddy_filter *eddy_filter_data(const char *path, eddy_data_op op, const eddy_field *value) {
    if (!path_ok(path) || (int)op < EDDY_DATA_EQ || op > EDDY_DATA_EXISTS)
        return NULL;
    if (op != EDDY_DATA_EXISTS && !value)
        return NULL;
    eddy_filter *f = leaf(EDDY__FILTER_DATA);
    if (!f)
        return NULL;
    f->needs_data = true;
    f->u.data.op = op;
    f->u.data.value = eddy_field_nil();
    if (!(f->u.data.path = strdup(path)) ||
        (op != EDDY_DATA_EXISTS && !copy_value(&f->u.data.value, value))) {
        free(f->u.data.path);
        free(f);
        return NULL;
    }
    return f;
}

static bool is_list(const eddy_filter *f, eddy__filter_kind kind) { return f->kind == kind; }

/* Appends the operands of src (itself, or its list when it is a node of the same kind) to
 * dst's list, which has room. src's shell is freed when its operands move. */
static void absorb(eddy_filter *dst, eddy_filter *src) {
    if (is_list(src, dst->kind)) {
        memcpy(dst->u.list.v + dst->u.list.n, src->u.list.v,
               src->u.list.n * sizeof(*src->u.list.v));
        dst->u.list.n += src->u.list.n;
        free(src->u.list.v);
        free(src);
    } else {
        dst->u.list.v[dst->u.list.n++] = src;
    }
}

static eddy_filter *combine(eddy__filter_kind kind, eddy_filter *a, eddy_filter *b) {
    if (!a || !b)
        goto fail;
    size_t na = is_list(a, kind) ? a->u.list.n : 1;
    size_t nb = is_list(b, kind) ? b->u.list.n : 1;
    /* Depth of the result: operands that are flattened contribute their operands' depth. */
    unsigned da = is_list(a, kind) ? a->depth - 1 : a->depth;
    unsigned db = is_list(b, kind) ? b->depth - 1 : b->depth;
    unsigned depth = 1 + (da > db ? da : db);
    if (depth > EDDY__FILTER_MAX_DEPTH || na > SIZE_MAX / sizeof(eddy_filter *) / 2 - nb)
        goto fail;
    size_t n = na + nb;
    eddy_filter *f;
    if (is_list(a, kind)) {
        /* Grow a's list in place (doubling, so a chain built one operand at a time is
         * linear overall). */
        f = a;
        if (n > f->u.list.cap) {
            size_t cap = f->u.list.cap * 2 > n ? f->u.list.cap * 2 : n;
            eddy_filter **v = realloc(f->u.list.v, cap * sizeof(*v));
            if (!v)
                goto fail;
            f->u.list.v = v;
            f->u.list.cap = cap;
        }
    } else {
        size_t cap = n < 4 ? 4 : n;
        if (!(f = calloc(1, sizeof(*f))) || !(f->u.list.v = malloc(cap * sizeof(eddy_filter *)))) {
            free(f);
            goto fail;
        }
        f->kind = kind;
        f->u.list.cap = cap;
        absorb(f, a);
    }
    f->needs_data = a->needs_data || b->needs_data; /* before absorb may free b */
    absorb(f, b);
    f->depth = depth;
    return f;
fail:
    eddy_filter_free(a);
    eddy_filter_free(b);
    return NULL;
}

eddy_filter *eddy_filter_and(eddy_filter *a, eddy_filter *b) {
    return combine(EDDY__FILTER_AND, a, b);
}

eddy_filter *eddy_filter_or(eddy_filter *a, eddy_filter *b) {
    return combine(EDDY__FILTER_OR, a, b);
}

eddy_filter *eddy_filter_dup(const eddy_filter *f) {
    if (!f)
        return NULL;
    eddy_filter *c;
    switch (f->kind) {
    case EDDY__FILTER_TYPES:
        /* Already sorted and distinct: the constructor keeps them so. */
        return eddy_filter_types((const char *const *)f->u.types.v, f->u.types.n);
    case EDDY__FILTER_SOURCE:
    case EDDY__FILTER_SUBJECT:
        return string_filter(f->kind, f->u.str);
    case EDDY__FILTER_TIME:
        if ((c = leaf(EDDY__FILTER_TIME)))
            c->u.time = f->u.time;
        return c;
    case EDDY__FILTER_DATA:
        return eddy_filter_data(f->u.data.path, f->u.data.op, &f->u.data.value);
    case EDDY__FILTER_AND:
    case EDDY__FILTER_OR:
        if (!(c = calloc(1, sizeof(*c))) ||
            !(c->u.list.v = calloc(f->u.list.n, sizeof(eddy_filter *)))) {
            free(c);
            return NULL;
        }
        c->kind = f->kind;
        c->depth = f->depth;
        c->needs_data = f->needs_data;
        c->u.list.cap = f->u.list.n;
        for (size_t i = 0; i < f->u.list.n; i++) {
            if (!(c->u.list.v[i] = eddy_filter_dup(f->u.list.v[i]))) {
                eddy_filter_free(c);
                return NULL;
            }
            c->u.list.n = i + 1;
        }
        return c;
    }
    return NULL;
}

void eddy_filter_free(eddy_filter *f) {
    if (!f)
        return;
    switch (f->kind) {
    case EDDY__FILTER_TYPES:
        for (size_t i = 0; i < f->u.types.n; i++)
            free(f->u.types.v[i]);
        free(f->u.types.v);
        break;
    case EDDY__FILTER_SOURCE:
    case EDDY__FILTER_SUBJECT:
        free(f->u.str);
        break;
    case EDDY__FILTER_TIME:
        break;
    case EDDY__FILTER_DATA:
        free(f->u.data.path);
        if (f->u.data.value.kind == EDDY_FIELD_STRING)
            free((char *)f->u.data.value.s);
        break;
    case EDDY__FILTER_AND:
    case EDDY__FILTER_OR:
        for (size_t i = 0; i < f->u.list.n; i++)
            eddy_filter_free(f->u.list.v[i]);
        free(f->u.list.v);
        break;
    }
    free(f);
}

/* ---- matching ------------------------------------------------------------------------- */

bool eddy_filter_needs_data(const eddy_filter *f) { return f && f->needs_data; }

/* The path of the first data condition, left to right (f needs data). */
static const char *first_path(const eddy_filter *f) {
    if (f->kind == EDDY__FILTER_DATA)
        return f->u.data.path;
    if (f->kind == EDDY__FILTER_AND || f->kind == EDDY__FILTER_OR)
        for (size_t i = 0; i < f->u.list.n; i++)
            if (f->u.list.v[i]->needs_data)
                return first_path(f->u.list.v[i]);
    return "?";
}

static eddy_status match_data(const eddy_filter *f, const eddy_event *ev,
                              const eddy_data_reader *reader, bool *matches, eddy_error *err) {
    eddy_field field = eddy_field_nil();
    bool found = false;
    /* The reader writes into a local error, so that err stays untouched on success and gets
     * a detail even from a reader that sets none. */
    eddy_error rerr;
    rerr.status = EDDY_OK;
    rerr.detail[0] = '\0';
    eddy_status st = reader->read(reader->self, ev, f->u.data.path, &field, &found, &rerr);
    if (st != EDDY_OK) {
        if (!err)
            return st;
        if (rerr.status == st) {
            *err = rerr;
            return st;
        }
        return eddy__fail(err, st, "data field '%s': the reader failed", f->u.data.path);
    }
    *matches = apply(f->u.data.op, found, &field, &f->u.data.value);
    return EDDY_OK;
}

static eddy_status match(const eddy_filter *f, const eddy_event *ev, const eddy_data_reader *reader,
                         bool *matches, eddy_error *err) {
    *matches = false;
    switch (f->kind) {
    case EDDY__FILTER_TYPES: {
        const char *type = eddy_event_type(ev);
        *matches = type && f->u.types.n &&
                   bsearch(&type, f->u.types.v, f->u.types.n, sizeof(char *), str_cmp) != NULL;
        return EDDY_OK;
    }
    case EDDY__FILTER_SOURCE: {
        const char *s = eddy_event_source(ev);
        *matches = s && strcmp(s, f->u.str) == 0;
        return EDDY_OK;
    }
    case EDDY__FILTER_SUBJECT: {
        const char *s = eddy_event_subject(ev);
        *matches = s && strcmp(s, f->u.str) == 0;
        return EDDY_OK;
    }
    case EDDY__FILTER_TIME: {
        eddy__instant t;
        if (!eddy__rfc3339_parse(eddy_event_time(ev), &t))
            return EDDY_OK;
        *matches = (!f->u.time.has_from || eddy__instant_cmp(t, f->u.time.from) >= 0) &&
                   (!f->u.time.has_to || eddy__instant_cmp(t, f->u.time.to) < 0);
        return EDDY_OK;
    }
    case EDDY__FILTER_DATA:
        return match_data(f, ev, reader, matches, err);
    case EDDY__FILTER_AND:
    case EDDY__FILTER_OR: {
        /* AND stops at the first operand that fails, OR at the first that passes. */
        bool stop_on = f->kind == EDDY__FILTER_OR;
        for (size_t i = 0; i < f->u.list.n; i++) {
            bool m;
            eddy_status st = match(f->u.list.v[i], ev, reader, &m, err);
            if (st != EDDY_OK)
                return st;
            if (m == stop_on) {
                *matches = stop_on;
                return EDDY_OK;
            }
        }
        *matches = !stop_on;
        return EDDY_OK;
    }
    }
    return EDDY_OK;
}

eddy_status eddy_filter_match(const eddy_filter *f, const eddy_event *ev,
                              const eddy_data_reader *reader, bool *matches, eddy_error *err) {
    if (!matches)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "filter match: matches is NULL");
    *matches = false;
    if (!f) {
        *matches = true;
        return EDDY_OK;
    }
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "filter match: event is NULL");
    if (f->needs_data && (!reader || !reader->read))
        return eddy__fail(err, EDDY_ERR_UNREADABLE_FILTER,
                          "filter: the condition on data field '%s' needs a data field reader",
                          first_path(f));
    return match(f, ev, reader, matches, err);
}

bool eddy_filter_matches(const eddy_filter *f, const eddy_event *ev) {
    bool m = false;
    if (!f)
        return true;
    return eddy_filter_match(f, ev, eddy_msgpack_reader(), &m, NULL) == EDDY_OK && m;
}

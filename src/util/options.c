/* SPDX-License-Identifier: BSD-3-Clause */
/* The machinery over the option tables (options.h): defaults, the caller-size rule, per-row
 * checks, set/get by name from text, and the owned copy. The error texts of the checks are the
 * ones a bus has always given ("settings.workers must be > 0"), whatever path reached them. */
#include "util/options.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "error.h"
#include "keys.h"

const eddy__opt *eddy__opts_find(const eddy__opt_table *t, const char *name) {
    if (!name)
        return NULL;
    for (size_t i = 0; i < t->nrows; i++)
        if (strcmp(t->rows[i].name, name) == 0)
            return &t->rows[i];
    return NULL;
}

void eddy__init_sized(void *dst, size_t size, const void *full, size_t full_size) {
    if (!dst || size < sizeof(size_t))
        return;
    memset(dst, 0, size);
    memcpy(dst, full, size < full_size ? size : full_size);
    memcpy(dst, &size, sizeof(size));
}

size_t eddy__opts_caller_size(const eddy__opt_table *t, size_t recorded) {
    if (recorded == 0)
        return t->size_0_3;
    return recorded < t->size ? recorded : t->size;
}

static void *field(void *s, size_t off) { return (char *)s + off; }
static const void *cfield(const void *s, size_t off) { return (const char *)s + off; }

/* A number row's value, widened: signed types as long long, unsigned as unsigned long long. */
static bool is_signed(eddy__opt_type type) {
    return type == EDDY__OPT_LONG || type == EDDY__OPT_LLONG || type == EDDY__OPT_ENUM;
}

static bool is_number(eddy__opt_type type) {
    switch (type) {
    case EDDY__OPT_UNSIGNED:
    case EDDY__OPT_SIZE:
    case EDDY__OPT_LONG:
    case EDDY__OPT_LLONG:
    case EDDY__OPT_ULLONG:
        return true;
    default:
        return false;
    }
}

/* Fields are read and written with memcpy: the buffers below are byte arrays. */
#define LOAD(T, p) (memcpy(&v_##T, (p), sizeof(T)), v_##T)

static unsigned long long get_u(const eddy__opt *o, const void *s) {
    const void *p = cfield(s, o->offset);
    unsigned v_unsigned;
    size_t v_size_t;
    unsigned long long v_ull;
    bool v_bool;
    switch (o->type) {
    case EDDY__OPT_UNSIGNED:
        return LOAD(unsigned, p);
    case EDDY__OPT_SIZE:
    case EDDY__OPT_COUNT:
        return LOAD(size_t, p);
    case EDDY__OPT_ULLONG:
        memcpy(&v_ull, p, sizeof(v_ull));
        return v_ull;
    case EDDY__OPT_BOOL:
        return LOAD(bool, p);
    default:
        return 0;
    }
}

static long long get_s(const eddy__opt *o, const void *s) {
    const void *p = cfield(s, o->offset);
    long v_long;
    long long v_ll;
    int v_int;
    switch (o->type) {
    case EDDY__OPT_LONG:
        return LOAD(long, p);
    case EDDY__OPT_LLONG:
        memcpy(&v_ll, p, sizeof(v_ll));
        return v_ll;
    case EDDY__OPT_ENUM:
        return LOAD(int, p);
    default:
        return 0;
    }
}

#define STORE(T, p, v)                                                                             \
    do {                                                                                           \
        T x_ = (T)(v);                                                                             \
        memcpy((p), &x_, sizeof(x_));                                                              \
    } while (0)

static void put_number(const eddy__opt *o, void *s, long long sv, unsigned long long uv) {
    void *p = field(s, o->offset);
    switch (o->type) {
    case EDDY__OPT_UNSIGNED:
        STORE(unsigned, p, uv);
        break;
    case EDDY__OPT_SIZE:
        STORE(size_t, p, uv);
        break;
    case EDDY__OPT_ULLONG:
        STORE(unsigned long long, p, uv);
        break;
    case EDDY__OPT_BOOL:
        STORE(bool, p, uv != 0);
        break;
    case EDDY__OPT_LONG:
        STORE(long, p, sv);
        break;
    case EDDY__OPT_LLONG:
        STORE(long long, p, sv);
        break;
    case EDDY__OPT_ENUM:
        STORE(int, p, sv);
        break;
    default:
        break;
    }
}

/* The largest value the field's C type holds (the table's max may be smaller). */
static unsigned long long type_max(eddy__opt_type type) {
    switch (type) {
    case EDDY__OPT_UNSIGNED:
        return UINT_MAX;
    case EDDY__OPT_SIZE:
        return SIZE_MAX;
    case EDDY__OPT_LONG:
        return LONG_MAX;
    case EDDY__OPT_LLONG:
        return LLONG_MAX;
    default:
        return ULLONG_MAX;
    }
}

void eddy__opts_init(const eddy__opt_table *t, void *dst, size_t size) {
    _Alignas(max_align_t) unsigned char full[1024];
    /* Every table's struct fits; a bigger one is a programming error caught by the tests. */
    if (t->size > sizeof(full) || size < sizeof(size_t))
        return;
    memset(full, 0, t->size);
    for (size_t i = 0; i < t->nrows; i++) {
        const eddy__opt *o = &t->rows[i];
        if (o->type == EDDY__OPT_STRING)
            memcpy(full + o->offset, &o->def_str, sizeof(o->def_str));
        else
            put_number(o, full, o->def, (unsigned long long)o->def);
    }
    size_t n = size < t->size ? size : t->size;
    memcpy(full, &n, sizeof(n)); /* struct_size leads every table's struct */
    memset(dst, 0, size);
    memcpy(dst, full, n);
    memcpy(dst, &size, sizeof(size));
}

void eddy__opts_widen(const eddy__opt_table *t, void *full, const void *src) {
    eddy__opts_init(t, full, t->size);
    if (!src)
        return;
    size_t recorded;
    memcpy(&recorded, src, sizeof(recorded));
    size_t n = eddy__opts_caller_size(t, recorded);
    if (n > sizeof(size_t))
        memcpy((char *)full + sizeof(size_t), (const char *)src + sizeof(size_t),
               n - sizeof(size_t));
    /* A field the caller's struct ends inside of (it cannot: fields are only appended) would
     * be half the caller's; the rows past n keep their defaults. */
    size_t size = t->size;
    memcpy(full, &size, sizeof(size));
}

static eddy_status check_row(const eddy__opt_table *t, const eddy__opt *o, const void *s,
                             eddy_error *err) {
    const char *pre = t->prefix;
    if (o->type == EDDY__OPT_STRING) {
        const char *v;
        memcpy(&v, cfield(s, o->offset), sizeof(v));
        if (!v && (o->flags & EDDY__OPT_NULL_DEFAULT))
            v = o->def_str;
        if (!v)
            return EDDY_OK;
        if ((o->flags & EDDY__OPT_KEY_SAFE) && !eddy__key_name_ok(v))
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                              "%s.%s '%s': 1-128 printable characters without space, '{', "
                              "'}' or ':'",
                              pre, o->name, v);
        if ((o->flags & EDDY__OPT_NOT_EMPTY) && !v[0])
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s is empty", pre, o->name);
        return EDDY_OK;
    }
    if (!is_number(o->type))
        return EDDY_OK;
    const char *note = o->range_note ? o->range_note : "";
    if (is_signed(o->type)) {
        long long v = get_s(o, s);
        if ((o->flags & EDDY__OPT_ZERO_OFF) && v == 0)
            return EDDY_OK;
        if (v < o->min) {
            if (o->min == 0)
                return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s is negative", pre, o->name);
            if (o->min == 1)
                return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s must be > 0%s", pre, o->name,
                                  note);
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s %lld: at least %lld%s", pre,
                              o->name, v, o->min, note);
        }
        if (o->max <= LLONG_MAX && v > (long long)o->max)
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s above %llu%s", pre, o->name,
                              o->max, note);
        return EDDY_OK;
    }
    unsigned long long v = get_u(o, s);
    if (o->flags & EDDY__OPT_ZERO_OFF) {
        if (v != 0 && (v < (unsigned long long)o->min || v > o->max))
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s %llu: 0 (off) or %lld to %llu%s",
                              pre, o->name, v, o->min, o->max, note);
        return EDDY_OK;
    }
    if (o->min > 0 && v < (unsigned long long)o->min) {
        if (o->min == 1)
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s must be > 0%s", pre, o->name,
                              note);
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s %llu: at least %lld%s", pre, o->name,
                          v, o->min, note);
    }
    if (v > o->max)
        return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s above %llu%s", pre, o->name, o->max,
                          note);
    return EDDY_OK;
}

eddy_status eddy__opts_check(const eddy__opt_table *t, const void *s, eddy_error *err) {
    for (size_t i = 0; i < t->nrows; i++) {
        eddy_status st = check_row(t, &t->rows[i], s, err);
        if (st != EDDY_OK)
            return st;
    }
    return EDDY_OK;
}

static const char *type_word(eddy__opt_type type) {
    switch (type) {
    case EDDY__OPT_CALLBACK:
        return "a callback";
    case EDDY__OPT_POINTER:
        return "a pointer";
    case EDDY__OPT_STRINGS:
        return "an array of strings";
    case EDDY__OPT_COUNT:
        return "an array's length";
    default:
        return "a value";
    }
}

static bool parse_bool(const char *v, bool *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"};
    static const char *const no[] = {"false", "0", "no", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = true, true;
        if (strcasecmp(v, no[i]) == 0)
            return *out = false, true;
    }
    return false;
}

eddy_status eddy__opts_set(const eddy__opt_table *t, void *s, const char *name, const char *value,
                           eddy_error *err) {
    if (!s || !name)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s_set: NULL %s", t->prefix,
                          !s ? "struct" : "name");
    const eddy__opt *o = eddy__opts_find(t, name);
    if (!o)
        return eddy__fail(err, EDDY_ERR_NOT_FOUND, "%s has no option '%s'", t->prefix, name);
    size_t recorded;
    memcpy(&recorded, s, sizeof(recorded));
    if (o->offset + o->size > eddy__opts_caller_size(t, recorded))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "%s.%s is newer than the headers this program was built with", t->prefix,
                          name);
    if (o->type == EDDY__OPT_CALLBACK || o->type == EDDY__OPT_POINTER ||
        o->type == EDDY__OPT_STRINGS || o->type == EDDY__OPT_COUNT)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT,
                          "%s.%s is %s: it is set in code, not from text", t->prefix, name,
                          type_word(o->type));
    /* Check on a copy, so that a refused value leaves the caller's struct untouched. */
    _Alignas(max_align_t) unsigned char copy[1024];
    if (t->size > sizeof(copy))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s: table too large", t->prefix);
    eddy__opts_widen(t, copy, s);
    if (o->type == EDDY__OPT_STRING) {
        memcpy(copy + o->offset, &value, sizeof(value));
    } else {
        if (!value || !value[0])
            return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s: no value", t->prefix, name);
        if (o->type == EDDY__OPT_BOOL) {
            bool b;
            if (!parse_bool(value, &b))
                return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                                  "%s.%s '%s': true or false (1/0, yes/no, on/off)", t->prefix,
                                  name, value);
            put_number(o, copy, b, b);
        } else if (o->type == EDDY__OPT_ENUM) {
            long long idx = -1;
            for (long long i = 0; o->choices && o->choices[i]; i++)
                if (strcasecmp(o->choices[i], value) == 0)
                    idx = i;
            if (idx < 0)
                return eddy__fail(err, EDDY_ERR_INVALID_SPEC, "%s.%s '%s': not one of its values",
                                  t->prefix, name, value);
            put_number(o, copy, idx, (unsigned long long)idx);
        } else {
            char *end = NULL;
            errno = 0;
            if (is_signed(o->type)) {
                long long v = strtoll(value, &end, 10);
                if (errno || end == value || *end ||
                    (o->type == EDDY__OPT_LONG && (v > LONG_MAX || v < LONG_MIN)))
                    return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                                      "%s.%s '%s': not a whole number of the field's range",
                                      t->prefix, name, value);
                put_number(o, copy, v, 0);
            } else {
                const char *p = value;
                while (*p == ' ')
                    p++;
                unsigned long long v = *p == '-' ? 0 : strtoull(value, &end, 10);
                if (*p == '-' || errno || end == value || *end || v > type_max(o->type))
                    return eddy__fail(err, EDDY_ERR_INVALID_SPEC,
                                      "%s.%s '%s': not a whole number from 0 to %llu", t->prefix,
                                      name, value, type_max(o->type));
                put_number(o, copy, 0, v);
            }
        }
    }
    eddy_status st = check_row(t, o, copy, err);
    if (st != EDDY_OK)
        return st;
    memcpy(field(s, o->offset), copy + o->offset, o->size);
    return EDDY_OK;
}

eddy_status eddy__opts_get(const eddy__opt_table *t, const void *s, const char *name, char *buf,
                           size_t len, eddy_error *err) {
    const eddy__opt *o = eddy__opts_find(t, name);
    if (!o)
        return eddy__fail(err, EDDY_ERR_NOT_FOUND, "%s has no option '%s'", t->prefix,
                          name ? name : "(null)");
    if (!buf || len == 0)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s_get: no buffer", t->prefix);
    _Alignas(max_align_t) unsigned char copy[1024];
    if (t->size > sizeof(copy))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s: table too large", t->prefix);
    eddy__opts_widen(t, copy, s);
    int n;
    switch (o->type) {
    case EDDY__OPT_STRING: {
        const char *v;
        memcpy(&v, copy + o->offset, sizeof(v));
        if (!v && (o->flags & EDDY__OPT_NULL_DEFAULT))
            v = o->def_str;
        n = snprintf(buf, len, "%s", v ? v : "");
        break;
    }
    case EDDY__OPT_BOOL:
        n = snprintf(buf, len, "%s", get_u(o, copy) ? "true" : "false");
        break;
    case EDDY__OPT_ENUM: {
        long long v = get_s(o, copy);
        n = snprintf(buf, len, "%s", o->choices && v >= 0 ? o->choices[v] : "?");
        break;
    }
    case EDDY__OPT_LONG:
    case EDDY__OPT_LLONG:
        n = snprintf(buf, len, "%lld", get_s(o, copy));
        break;
    case EDDY__OPT_UNSIGNED:
    case EDDY__OPT_SIZE:
    case EDDY__OPT_ULLONG:
    case EDDY__OPT_COUNT:
        n = snprintf(buf, len, "%llu", get_u(o, copy));
        break;
    default:
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "%s.%s is %s: it has no text form",
                          t->prefix, name, type_word(o->type));
    }
    if (n < 0 || (size_t)n >= len)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "%s.%s: the value needs %d bytes", t->prefix,
                          name, n + 1);
    return EDDY_OK;
}

eddy_status eddy__opts_copy(const eddy__opt_table *t, void *dst, const void *src, eddy_error *err) {
    for (size_t i = 0; i < t->nrows; i++) {
        const eddy__opt *o = &t->rows[i];
        if (o->copy_offset == EDDY__OPT_NO_COPY)
            continue;
        if (o->type == EDDY__OPT_STRING) {
            const char *v;
            memcpy(&v, cfield(src, o->offset), sizeof(v));
            if (!v && (o->flags & EDDY__OPT_NULL_DEFAULT))
                v = o->def_str;
            char *dup = NULL;
            if (v && !(dup = strdup(v))) {
                eddy__opts_free(t, dst);
                return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying %s", t->prefix);
            }
            memcpy(field(dst, o->copy_offset), &dup, sizeof(dup));
        } else {
            memcpy(field(dst, o->copy_offset), cfield(src, o->offset), o->size);
        }
    }
    return EDDY_OK;
}

void eddy__opts_free(const eddy__opt_table *t, void *dst) {
    for (size_t i = 0; i < t->nrows; i++) {
        const eddy__opt *o = &t->rows[i];
        if (o->copy_offset == EDDY__OPT_NO_COPY || o->type != EDDY__OPT_STRING)
            continue;
        char *v;
        memcpy(&v, field(dst, o->copy_offset), sizeof(v));
        free(v);
        v = NULL;
        memcpy(field(dst, o->copy_offset), &v, sizeof(v));
    }
}

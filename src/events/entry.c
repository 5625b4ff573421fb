/* SPDX-License-Identifier: BSD-3-Clause */
/* One CloudEvent as one Redis stream entry, both ways.
 *
 * Encoding writes specversion, the required and optional attributes, the extensions as
 * "x-<name>" in insertion order, and "data" last; eddy_event_size counts exactly these bytes.
 * Decoding reads bytes from Redis that anyone may have written, so it is defensive and
 * bounded: it refuses an entry by the size of its event fields (the same measure) before
 * allocating anything, checks every field (known name, no duplicate, no NUL in text) before
 * building the event, and only then builds it: as one allocation of roughly the entry's own
 * size (struct, extension array and strings together), or, for a view, as pointers into the
 * entry's bytes in caller storage, with no allocation at all. Reads run this for every entry,
 * so the checks are one pass over the fields. Fields starting with '_' belong to the bus and
 * are skipped. The detail of a refusal names the field, rendered printable.
 */
#include "events/entry.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/event_internal.h"
#include "util/cetext.h"
#include "util/resp_scan.h"

enum field {
    F_SPECVERSION,
    F_ID,
    F_SOURCE,
    F_TYPE,
    F_SUBJECT,
    F_TIME,
    F_DATACONTENTTYPE,
    F_DATASCHEMA,
    F_DATA,
    F_COUNT
};

static const char *const field_names[F_COUNT] = {
    "specversion",     "id",         "source", "type", "subject", "time",
    "datacontenttype", "dataschema", "data",
};

#define REQUIRED_FIELDS ((1u << F_SPECVERSION) | (1u << F_ID) | (1u << F_SOURCE) | (1u << F_TYPE))
#define EXT_PREFIX "x-"
#define EXT_PREFIX_LEN 2

/* A typed extension's field is "x-<name>:<type>" (wire format 2, eddy__ext_type_suffix); a
 * String's stays "x-<name>", which every reader of format 1 understands. */
#define TYPE_COUNT ((unsigned)EDDY_EXT_TIMESTAMP + 1)
#define SPECVERSION "1.0"

/* Extension names met while decoding, sorted to find duplicates in O(n log n): an entry may
 * carry many thousands of tiny "x-" fields and a quadratic scan would be a denial of service. */
struct span {
    const char *p;
    size_t n;
};

/* Most entries have few extensions; those are checked without allocating. */
#define SMALL_EXT 16

static int span_cmp(const void *a, const void *b) {
    const struct span *x = a, *y = b;
    size_t n = x->n < y->n ? x->n : y->n;
    int c = memcmp(x->p, y->p, n);
    if (c)
        return c;
    return (x->n > y->n) - (x->n < y->n);
}

static void append_attr(eddy__cmd *cmd, const char *name, const char *value) {
    if (value) {
        eddy__cmd_str(cmd, name);
        eddy__cmd_str(cmd, value);
    }
}

eddy_status eddy__entry_encode(const eddy_event *ev, eddy__cmd *cmd) {
    if (!ev || !cmd)
        return EDDY_ERR_INVALID_ARGUMENT;
    /* The event must be valid; refusing the impossible case here keeps NULLs out of argv. */
    if (!eddy_event_id(ev) || !eddy_event_source(ev) || !eddy_event_type(ev))
        return EDDY_ERR_INVALID_EVENT;
    append_attr(cmd, field_names[F_SPECVERSION], SPECVERSION);
    append_attr(cmd, field_names[F_ID], eddy_event_id(ev));
    append_attr(cmd, field_names[F_SOURCE], eddy_event_source(ev));
    append_attr(cmd, field_names[F_TYPE], eddy_event_type(ev));
    append_attr(cmd, field_names[F_SUBJECT], eddy_event_subject(ev));
    append_attr(cmd, field_names[F_TIME], eddy_event_time(ev));
    append_attr(cmd, field_names[F_DATACONTENTTYPE], eddy_event_datacontenttype(ev));
    append_attr(cmd, field_names[F_DATASCHEMA], eddy_event_dataschema(ev));
    size_t next = eddy_event_extension_count(ev);
    for (size_t i = 0; i < next; i++) {
        const char *name, *value;
        eddy_ext_type type = EDDY_EXT_STRING;
        eddy_event_extension_at(ev, i, &name, &value);
        eddy_event_extension_type_at(ev, i, &type);
        eddy__cmd_fmt(cmd, EXT_PREFIX "%s%s", name, eddy__ext_type_suffix(type));
        eddy__cmd_str(cmd, value);
    }
    size_t len;
    const void *data = eddy_event_data(ev, &len);
    if (data) {
        eddy__cmd_str(cmd, field_names[F_DATA]);
        eddy__cmd_arg(cmd, data, len);
    }
    return eddy__cmd_status(cmd);
}

/* The core field called name[0..len), or -1; picked by length and first letter, then compared
 * once: it runs for every field of every entry read. */
static int core_field(const char *name, size_t len) {
    int f;
    switch (len) {
    case 2:
        f = F_ID;
        break;
    case 4:
        f = name[0] == 't' ? (name[1] == 'y' ? F_TYPE : F_TIME) : F_DATA;
        break;
    case 6:
        f = F_SOURCE;
        break;
    case 7:
        f = F_SUBJECT;
        break;
    case 10:
        f = F_DATASCHEMA;
        break;
    case 11:
        f = F_SPECVERSION;
        break;
    case 15:
        f = F_DATACONTENTTYPE;
        break;
    default:
        return -1;
    }
    const char *want = field_names[f];
    for (size_t i = 0; i < len; i++) /* a few bytes: cheaper than a call to memcmp */
        if (want[i] != name[i])
            return -1;
    return f;
}

/* The length of the name part of an extension field "x-<name>[:<type>]" (the field's own length
 * for a String), with the type in *type; 0 when the field is not a valid extension field. */
static size_t extension_field(const char *name, size_t len, eddy_ext_type *type) {
    if (len <= EXT_PREFIX_LEN || memcmp(name, EXT_PREFIX, EXT_PREFIX_LEN) != 0)
        return 0;
    const char *colon = memchr(name + EXT_PREFIX_LEN, ':', len - EXT_PREFIX_LEN);
    size_t nlen = colon ? (size_t)(colon - name) : len;
    eddy_ext_type t = EDDY_EXT_STRING;
    if (colon) {
        size_t slen = len - nlen;
        unsigned k = 1;
        while (k < TYPE_COUNT &&
               !(strlen(eddy__ext_type_suffix((eddy_ext_type)k)) == slen &&
                 memcmp(eddy__ext_type_suffix((eddy_ext_type)k), colon, slen) == 0))
            k++;
        if (k == TYPE_COUNT)
            return 0;
        t = (eddy_ext_type)k;
    }
    if (!eddy__extension_name_ok(name + EXT_PREFIX_LEN, nlen - EXT_PREFIX_LEN))
        return 0;
    if (type)
        *type = t;
    return nlen;
}

/* extension_field for a field already checked: only splits off the type. */
static size_t checked_extension(const char *name, size_t len, eddy_ext_type *type) {
    const char *colon = memchr(name + EXT_PREFIX_LEN, ':', len - EXT_PREFIX_LEN);
    *type = EDDY_EXT_STRING;
    return colon ? extension_field(name, len, type) : len;
}

static bool is_extension_field(const char *name, size_t len) {
    return extension_field(name, len, NULL) != 0;
}

static eddy_status field_fail(eddy_error *err, const char *name, size_t len, const char *why) {
    char shown[64];
    return eddy__fail(err, EDDY_ERR_MALFORMED, "field '%s': %s",
                      eddy__printable(shown, sizeof(shown), name, len), why);
}

/* Finds two extension fields with the same name. spans has room for next entries. */
static eddy_status check_duplicate_extensions(const char *const *fv, const size_t *fvlen,
                                              size_t nfv, size_t next, eddy_error *err) {
    struct span small[SMALL_EXT];
    struct span *spans = small;
    if (next > SMALL_EXT && !(spans = malloc(next * sizeof(*spans))))
        return eddy__fail(err, EDDY_ERR_NOMEM, "entry: out of memory");
    size_t k = 0;
    for (size_t i = 0; i < nfv; i += 2) {
        size_t nlen = extension_field(fv[i], fvlen[i], NULL);
        if (nlen) /* "x-a" and "x-a:integer" are the same extension twice */
            spans[k++] = (struct span){fv[i], nlen};
    }
    qsort(spans, k, sizeof(*spans), span_cmp);
    eddy_status st = EDDY_OK;
    for (size_t i = 1; i < k; i++) {
        if (span_cmp(&spans[i - 1], &spans[i]) == 0) {
            st = field_fail(err, spans[i].p, spans[i].n, "duplicate field");
            break;
        }
    }
    if (spans != small)
        free(spans);
    return st;
}

/* True when s[0..len) can be borrowed as a C string: a NUL follows it where it lies. */
static bool terminated(const char *s, size_t len) { return !s || s[len] == '\0'; }

/* Builds the checked event: borrowing every string into view when view is not NULL and they
 * all can be borrowed, otherwise as one packed allocation. */
static eddy_status build(const char *const *fv, const size_t *fvlen, size_t nfv,
                         const char *const *value, const size_t *vlen, size_t next,
                         eddy__event_view *view, eddy_event **out) {
    bool borrow = view && next <= EDDY__VIEW_EXT;
    size_t bytes = 0;
    for (int f = F_ID; f < F_COUNT; f++) {
        if (value[f]) {
            bytes += vlen[f] + 1;
            borrow = borrow && terminated(value[f], vlen[f]);
        }
    }
    for (size_t i = 0; i < nfv && next; i += 2) {
        if (fvlen[i] && fv[i][0] != '_' && core_field(fv[i], fvlen[i]) < 0) {
            bytes += fvlen[i] - EXT_PREFIX_LEN + fvlen[i + 1] + 2;
            /* a typed field's name is not terminated where the name part ends */
            borrow = borrow && !memchr(fv[i] + EXT_PREFIX_LEN, ':', fvlen[i] - EXT_PREFIX_LEN) &&
                     terminated(fv[i], fvlen[i]) && terminated(fv[i + 1], fvlen[i + 1]);
        }
    }
    char *cur = NULL;
    eddy_event *ev =
        borrow ? eddy__event_view_init(view) : eddy__event_packed_new(next, bytes, &cur);
    if (!ev)
        return EDDY_ERR_NOMEM;
    /* the field order F_ID..F_DATASCHEMA is the attribute order EDDY__A_ID..EDDY__A_DATASCHEMA */
    for (int f = F_ID; f < F_DATA; f++) {
        if (value[f])
            ev->attr[f - F_ID] =
                borrow ? (char *)value[f] : eddy__event_packed_put(&cur, value[f], vlen[f]);
    }
    for (size_t i = 0; i < nfv && ev->next < next; i += 2) {
        if (fvlen[i] && fv[i][0] != '_' && core_field(fv[i], fvlen[i]) < 0) {
            const char *name = fv[i] + EXT_PREFIX_LEN, *v = fv[i + 1] ? fv[i + 1] : "";
            eddy_ext_type type = EDDY_EXT_STRING;
            size_t nlen = checked_extension(fv[i], fvlen[i], &type) - EXT_PREFIX_LEN;
            struct eddy__ext *e = &ev->ext[ev->next++];
            e->type = type;
            e->name = borrow ? (char *)name : eddy__event_packed_put(&cur, name, nlen);
            e->value = borrow ? (char *)v : eddy__event_packed_put(&cur, v, fvlen[i + 1]);
        }
    }
    if (value[F_DATA]) {
        ev->data =
            (unsigned char *)(borrow ? (char *)value[F_DATA]
                                     : eddy__event_packed_put(&cur, value[F_DATA], vlen[F_DATA]));
        ev->datalen = vlen[F_DATA];
    }
    if (view && !borrow)
        view->owned = ev;
    *out = ev;
    return EDDY_OK;
}

/* Checks the entry, then builds it (see build). On failure nothing is left allocated. */
static eddy_status decode(const char *const *fv, const size_t *fvlen, size_t nfv, size_t max_size,
                          eddy__event_view *view, eddy_event **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!out || (nfv && (!fv || !fvlen)))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "entry: NULL argument");
    if (nfv % 2)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "entry: odd number of fields and values (%zu)",
                          nfv);
    /* One pass, with the refusals' precedence of separate passes: a NULL anywhere, then an
     * entry over the limit (whose bytes past the limit are never read), then the first bad
     * field. The limit applies to the event's own fields, the measure eddy_event_size gives the
     * publisher, so an event accepted at publish is never refused here because the bus added
     * '_' metadata (a dead letter's reason, a reply address). Those are never copied. Every
     * field is checked before anything is allocated. */
    size_t total = 0;
    bool too_large = false;
    const char *bad = NULL, *bad_name = NULL; /* the first bad field: why, and its name */
    size_t bad_len = 0;
    const char *value[F_COUNT] = {0};
    size_t vlen[F_COUNT] = {0};
    unsigned seen = 0;
    size_t next = 0;
    for (size_t i = 0; i < nfv; i += 2) {
        const char *name = fv[i], *v = fv[i + 1];
        size_t nlen = fvlen[i], len = fvlen[i + 1];
        if ((!name && nlen) || (!v && len))
            return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "entry: NULL field or value");
        if ((nlen && name[0] == '_') || too_large)
            continue;
        /* A value the transport skipped as larger than the limit (resp_scan.h). */
        if (eddy__resp_skipped(v, len, NULL) || nlen > max_size - total ||
            len > max_size - total - nlen) {
            too_large = true;
            continue;
        }
        total += nlen + len;
        if (bad)
            continue;
        int f = core_field(name, nlen);
        if (f < 0 && !is_extension_field(name, nlen))
            bad = "unknown field";
        else if (f >= 0 && (seen & (1u << f)))
            bad = "duplicate field";
        else if (f != F_DATA && len && memchr(v, '\0', len))
            bad = "NUL byte in attribute text";
        if (bad) {
            bad_name = name, bad_len = nlen;
            continue;
        }
        if (f < 0) {
            next++;
            continue;
        }
        seen |= 1u << f;
        value[f] = v ? v : "";
        vlen[f] = len;
    }
    if (too_large)
        return eddy__fail(err, EDDY_ERR_TOO_LARGE, "entry: event fields exceed %zu bytes",
                          max_size);
    if (bad)
        return field_fail(err, bad_name, bad_len, bad);
    for (int f = 0; (seen & REQUIRED_FIELDS) != REQUIRED_FIELDS && f < F_COUNT; f++) {
        if ((REQUIRED_FIELDS & (1u << f)) && !(seen & (1u << f)))
            return field_fail(err, field_names[f], strlen(field_names[f]), "missing");
    }
    if (vlen[F_SPECVERSION] != strlen(SPECVERSION) ||
        memcmp(value[F_SPECVERSION], SPECVERSION, vlen[F_SPECVERSION]) != 0)
        return field_fail(err, "specversion", strlen("specversion"), "must be \"" SPECVERSION "\"");
    eddy_status st;
    if (next > 1 && (st = check_duplicate_extensions(fv, fvlen, nfv, next, err)) != EDDY_OK)
        return st;

    eddy_event *ev;
    if (build(fv, fvlen, nfv, value, vlen, next, view, &ev) != EDDY_OK)
        return eddy__fail(err, EDDY_ERR_NOMEM, "entry: out of memory");

    eddy_error why;
    if (eddy_event_validate(ev, &why) != EDDY_OK) {
        /* validate's detail is "<attribute>: <reason>"; name the field as the others do: an
         * extension's is "x-<name>[:<type>]" */
        const char *sep = strstr(why.detail, ": ");
        char field[300] = "";
        if (sep) {
            int n = (int)(sep - why.detail);
            char name[256];
            snprintf(name, sizeof(name), "%.*s", n, why.detail);
            eddy_ext_type type;
            if (core_field(name, strlen(name)) < 0 &&
                eddy_event_ext_type(ev, name, &type) == EDDY_OK)
                snprintf(field, sizeof(field), EXT_PREFIX "%s%s", name,
                         eddy__ext_type_suffix(type));
            else
                snprintf(field, sizeof(field), "%s", name);
        }
        if (view)
            eddy__event_view_release(view);
        else
            eddy_event_free(ev);
        if (!sep)
            return eddy__fail(err, EDDY_ERR_MALFORMED, "%s", why.detail);
        return eddy__fail(err, EDDY_ERR_MALFORMED, "field '%s': %s", field, sep + 2);
    }
    *out = ev;
    return EDDY_OK;
}

eddy_status eddy__entry_decode(const char *const *fv, const size_t *fvlen, size_t nfv,
                               size_t max_size, eddy_event **out, eddy_error *err) {
    return decode(fv, fvlen, nfv, max_size, NULL, out, err);
}

eddy_status eddy__entry_decode_view(const char *const *fv, const size_t *fvlen, size_t nfv,
                                    size_t max_size, eddy__event_view *view, const eddy_event **out,
                                    eddy_error *err) {
    if (out)
        *out = NULL;
    if (!view || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "entry: NULL argument");
    view->owned = NULL;
    eddy_event *ev;
    eddy_status st = decode(fv, fvlen, nfv, max_size, view, &ev, err);
    if (st == EDDY_OK)
        *out = ev;
    return st;
}

const char *eddy__entry_field(const char *const *fv, const size_t *fvlen, size_t nfv,
                              const char *name, size_t *len) {
    if (len)
        *len = 0;
    if (!fv || !fvlen || !name)
        return NULL;
    size_t n = strlen(name);
    for (size_t i = 0; i + 1 < nfv; i += 2) {
        if (fvlen[i] == n && (n == 0 || memcmp(fv[i], name, n) == 0)) {
            if (len)
                *len = fvlen[i + 1];
            return fv[i + 1] ? fv[i + 1] : "";
        }
    }
    return NULL;
}

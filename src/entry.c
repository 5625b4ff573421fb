/* One CloudEvent as one Redis stream entry, both ways.
 *
 * Encoding writes specversion, the required and optional attributes, the extensions as
 * "x-<name>" in insertion order, and "data" last; eddy_event_size counts exactly these bytes.
 * Decoding reads bytes from Redis that anyone may have written, so it is defensive and
 * bounded: it refuses an entry by the size of its event fields (the same measure) before
 * allocating anything, checks every field (known name, no duplicate, no NUL in text) before
 * building the event, and only then allocates, roughly the entry's own size. Fields starting
 * with '_' belong to the bus and are skipped. The detail of a refusal names the field, rendered
 * printable.
 */
#include "entry.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "event_internal.h"

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
        eddy_event_extension_at(ev, i, &name, &value);
        eddy__cmd_fmt(cmd, EXT_PREFIX "%s", name);
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

static int core_field(const char *name, size_t len) {
    for (int f = 0; f < F_COUNT; f++) {
        if (strlen(field_names[f]) == len && memcmp(field_names[f], name, len) == 0)
            return f;
    }
    return -1;
}

static bool is_extension_field(const char *name, size_t len) {
    return len > EXT_PREFIX_LEN && memcmp(name, EXT_PREFIX, EXT_PREFIX_LEN) == 0 &&
           eddy__extension_name_ok(name + EXT_PREFIX_LEN, len - EXT_PREFIX_LEN);
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
        if (is_extension_field(fv[i], fvlen[i]))
            spans[k++] = (struct span){fv[i], fvlen[i]};
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

eddy_status eddy__entry_decode(const char *const *fv, const size_t *fvlen, size_t nfv,
                               size_t max_size, eddy_event **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!out || (nfv && (!fv || !fvlen)))
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "entry: NULL argument");
    if (nfv % 2)
        return eddy__fail(err, EDDY_ERR_MALFORMED, "entry: odd number of fields and values (%zu)",
                          nfv);
    /* The limit applies to the event's own fields, the measure eddy_event_size gives the
     * publisher, so an event accepted at publish is never refused here because the bus added
     * '_' metadata (a dead letter's reason, a reply address). Those are never copied. */
    size_t total = 0;
    for (size_t i = 0; i < nfv; i++) {
        if (!fv[i] && fvlen[i])
            return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "entry: NULL field or value");
    }
    for (size_t i = 0; i < nfv; i += 2) {
        if (fvlen[i] && fv[i][0] == '_')
            continue;
        if (fvlen[i] > max_size - total || fvlen[i + 1] > max_size - total - fvlen[i])
            return eddy__fail(err, EDDY_ERR_TOO_LARGE, "entry: event fields exceed %zu bytes",
                              max_size);
        total += fvlen[i] + fvlen[i + 1];
    }

    /* Every field is checked before anything is allocated. */
    const char *value[F_COUNT] = {0};
    size_t vlen[F_COUNT] = {0};
    unsigned seen = 0;
    size_t next = 0;
    for (size_t i = 0; i < nfv; i += 2) {
        const char *name = fv[i], *v = fv[i + 1];
        size_t nlen = fvlen[i], len = fvlen[i + 1];
        if (nlen && name[0] == '_')
            continue;
        int f = core_field(name, nlen);
        if (f < 0 && !is_extension_field(name, nlen))
            return field_fail(err, name, nlen, "unknown field");
        if (f >= 0 && (seen & (1u << f)))
            return field_fail(err, name, nlen, "duplicate field");
        if (f != F_DATA && len && memchr(v, '\0', len))
            return field_fail(err, name, nlen, "NUL byte in attribute text");
        if (f < 0) {
            next++;
            continue;
        }
        seen |= 1u << f;
        value[f] = v ? v : "";
        vlen[f] = len;
    }
    for (int f = 0; f < F_COUNT; f++) {
        if ((REQUIRED_FIELDS & (1u << f)) && !(seen & (1u << f)))
            return field_fail(err, field_names[f], strlen(field_names[f]), "missing");
    }
    if (vlen[F_SPECVERSION] != strlen(SPECVERSION) ||
        memcmp(value[F_SPECVERSION], SPECVERSION, vlen[F_SPECVERSION]) != 0)
        return field_fail(err, "specversion", strlen("specversion"), "must be \"" SPECVERSION "\"");
    eddy_status st;
    if (next > 1 && (st = check_duplicate_extensions(fv, fvlen, nfv, next, err)) != EDDY_OK)
        return st;

    eddy_event *ev = eddy_event_new();
    if (!ev)
        goto nomem;
    for (int f = F_ID; f < F_DATA; f++) {
        if (value[f] && eddy__event_set_attr_n(ev, field_names[f], value[f], vlen[f]) != EDDY_OK)
            goto nomem;
    }
    for (size_t i = 0; i < nfv && next; i += 2) {
        if (fvlen[i] && fv[i][0] != '_' && core_field(fv[i], fvlen[i]) < 0 &&
            eddy__event_append_extension_n(ev, fv[i] + EXT_PREFIX_LEN, fvlen[i] - EXT_PREFIX_LEN,
                                           fv[i + 1] ? fv[i + 1] : "", fvlen[i + 1]) != EDDY_OK)
            goto nomem;
    }
    if (value[F_DATA] && eddy_event_set_data(ev, value[F_DATA], vlen[F_DATA]) != EDDY_OK)
        goto nomem;

    eddy_error why;
    if (eddy_event_validate(ev, &why) != EDDY_OK) {
        eddy_event_free(ev);
        /* validate's detail is "<attribute>: <reason>"; quote the name like the others */
        const char *sep = strstr(why.detail, ": ");
        if (!sep)
            return eddy__fail(err, EDDY_ERR_MALFORMED, "%s", why.detail);
        return eddy__fail(err, EDDY_ERR_MALFORMED, "field '%.*s': %s", (int)(sep - why.detail),
                          why.detail, sep + 2);
    }
    *out = ev;
    return EDDY_OK;
nomem:
    eddy_event_free(ev);
    return eddy__fail(err, EDDY_ERR_NOMEM, "entry: out of memory");
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

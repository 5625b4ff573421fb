/* SPDX-License-Identifier: BSD-3-Clause */
/* CloudEvents v1.0 events: an owned set of attribute strings, ordered extensions and
 * binary-safe data, plus the validator for the CloudEvents 1.0 rules.
 *
 * Invariants: every stored string is NUL-terminated without inner NUL bytes; extension names
 * are valid and unique from the moment they are stored, and keep insertion order (the entry
 * encoding writes them in that order, so a round trip preserves it); data is stored with one
 * extra NUL byte not counted in its length, so text data reads as a string. A string is either
 * an allocation of its own or lies in the event's fixed range (event_internal.h): a packed
 * event's block, or a view's borrowed bytes; only the former is ever freed, so the setters work
 * the same on a packed event (a replaced string in the block just goes unused). A setter that
 * fails leaves the event unchanged: it allocates everything it needs before it frees or
 * replaces anything. Validation only reads and never allocates.
 */
#include "eddy/event.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "events/event_internal.h"
#include "util/cetext.h"

enum attr {
    A_ID = EDDY__A_ID,
    A_SOURCE = EDDY__A_SOURCE,
    A_TYPE = EDDY__A_TYPE,
    A_SUBJECT = EDDY__A_SUBJECT,
    A_TIME = EDDY__A_TIME,
    A_DATACONTENTTYPE = EDDY__A_DATACONTENTTYPE,
    A_DATASCHEMA = EDDY__A_DATASCHEMA,
    A_COUNT = EDDY__A_COUNT
};

static const char *const attr_names[A_COUNT] = {
    "id", "source", "type", "subject", "time", "datacontenttype", "dataschema",
};

/* Names an extension may not take: the core attributes, specversion and data. */
static const char *const reserved_names[] = {
    "id",   "source",          "specversion", "type", "subject",
    "time", "datacontenttype", "dataschema",  "data",
};

#define SPECVERSION "1.0"

static char *copy_n(const char *s, size_t len) {
    char *c = malloc(len + 1);
    if (!c)
        return NULL;
    if (len)
        memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

const char *eddy__printable(char *buf, size_t size, const char *bytes, size_t len) {
    size_t max = size > 4 ? size - 4 : 0; /* room for "..." and the NUL */
    size_t n = 0;
    if (!size)
        return buf;
    for (size_t i = 0; i < len && n < max; i++) {
        unsigned char c = (unsigned char)bytes[i];
        buf[n++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    if (len > max && size > 4) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

/* ---- construction ---- */

eddy_event *eddy_event_new(void) { return calloc(1, sizeof(eddy_event)); }

static bool is_view(const eddy_event *ev) { return ev->fixed_hi == UINTPTR_MAX; }

/* Frees p unless it lies in the event's fixed range (it is not an allocation of its own). */
static void release(const eddy_event *ev, void *p) {
    uintptr_t u = (uintptr_t)p;
    if (u < ev->fixed_lo || u >= ev->fixed_hi)
        free(p);
}

void eddy_event_free(eddy_event *ev) {
    if (!ev || is_view(ev))
        return;
    for (int i = 0; i < A_COUNT; i++)
        release(ev, ev->attr[i]);
    for (size_t i = 0; i < ev->next; i++)
        release(ev, ev->ext[i].name);
    release(ev, ev->ext);
    release(ev, ev->data);
    free(ev);
}

eddy_event *eddy__event_packed_new(size_t next, size_t bytes, char **cursor) {
    size_t head = sizeof(eddy_event) + next * sizeof(struct eddy__ext);
    if (next > (SIZE_MAX - sizeof(eddy_event)) / sizeof(struct eddy__ext) ||
        bytes > SIZE_MAX - head)
        return NULL;
    eddy_event *ev = malloc(head + bytes);
    if (!ev)
        return NULL;
    memset(ev, 0, sizeof(*ev));
    ev->ext = next ? (struct eddy__ext *)(ev + 1) : NULL;
    ev->extcap = next;
    ev->fixed_lo = (uintptr_t)ev;
    ev->fixed_hi = ev->fixed_lo + head + bytes;
    *cursor = (char *)ev + head;
    return ev;
}

char *eddy__event_packed_put(char **cursor, const char *s, size_t len) {
    char *p = *cursor;
    if (len)
        memcpy(p, s, len);
    p[len] = '\0';
    *cursor = p + len + 1;
    return p;
}

eddy_event *eddy__event_view_init(eddy__event_view *view) {
    memset(&view->ev, 0, sizeof(view->ev));
    view->ev.ext = view->ext;
    view->ev.extcap = EDDY__VIEW_EXT;
    view->ev.fixed_hi = UINTPTR_MAX;
    view->owned = NULL;
    return &view->ev;
}

void eddy__event_view_release(eddy__event_view *view) {
    if (!view)
        return;
    eddy_event_free(view->owned);
    view->owned = NULL;
}

static eddy_status ext_reserve(eddy_event *ev, size_t want) {
    if (want <= ev->extcap)
        return EDDY_OK;
    size_t cap = ev->extcap ? ev->extcap : 4;
    while (cap < want)
        cap *= 2;
    struct eddy__ext *e;
    uintptr_t u = (uintptr_t)ev->ext;
    if (ev->ext && u >= ev->fixed_lo && u < ev->fixed_hi) {
        /* a packed event's array cannot grow in place */
        if (!(e = malloc(cap * sizeof(*e))))
            return EDDY_ERR_NOMEM;
        memcpy(e, ev->ext, ev->next * sizeof(*e));
    } else if (!(e = realloc(ev->ext, cap * sizeof(*e)))) {
        return EDDY_ERR_NOMEM;
    }
    ev->ext = e;
    ev->extcap = cap;
    return EDDY_OK;
}

static struct eddy__ext ext_make(const char *name, size_t nlen, const char *value, size_t vlen) {
    struct eddy__ext e = {NULL, NULL, EDDY_EXT_STRING};
    char *block = malloc(nlen + 1 + vlen + 1);
    if (!block)
        return e;
    memcpy(block, name, nlen);
    block[nlen] = '\0';
    if (vlen)
        memcpy(block + nlen + 1, value, vlen);
    block[nlen + 1 + vlen] = '\0';
    e.name = block;
    e.value = block + nlen + 1;
    return e;
}

eddy_status eddy__event_append_extension_n(eddy_event *ev, const char *name, size_t nlen,
                                           const char *value, size_t vlen) {
    if (ext_reserve(ev, ev->next + 1) != EDDY_OK)
        return EDDY_ERR_NOMEM;
    struct eddy__ext e = ext_make(name, nlen, value, vlen);
    if (!e.name)
        return EDDY_ERR_NOMEM;
    ev->ext[ev->next++] = e;
    return EDDY_OK;
}

static struct eddy__ext *find_ext(const eddy_event *ev, const char *name);

eddy_status eddy__event_set_extensions(eddy_event *ev, size_t n, const char *const *names,
                                       const char *const *values) {
    struct eddy__ext made[4];
    if (n > sizeof(made) / sizeof(made[0]) || ext_reserve(ev, ev->next + n) != EDDY_OK)
        return EDDY_ERR_NOMEM;
    size_t k = 0;
    for (; k < n; k++) {
        made[k] = values[k] ? ext_make(names[k], strlen(names[k]), values[k], strlen(values[k]))
                            : (struct eddy__ext){NULL, NULL, EDDY_EXT_STRING};
        if (values[k] && !made[k].name)
            break;
    }
    if (k < n) {
        while (k--)
            free(made[k].name);
        return EDDY_ERR_NOMEM;
    }
    for (k = 0; k < n; k++) {
        struct eddy__ext *old = find_ext(ev, names[k]);
        if (old && !values[k]) {
            release(ev, old->name);
            memmove(old, old + 1, (ev->next - (size_t)(old - ev->ext) - 1) * sizeof(*old));
            ev->next--;
        } else if (old) {
            release(ev, old->name);
            *old = made[k];
        } else if (values[k]) {
            ev->ext[ev->next++] = made[k];
        }
    }
    return EDDY_OK;
}

/* One allocation, like a decoded event: what is kept gets cheap to keep. */
eddy_event *eddy_event_dup(const eddy_event *ev) {
    if (!ev)
        return NULL;
    size_t alen[A_COUNT] = {0}, bytes = 0;
    for (int i = 0; i < A_COUNT; i++)
        if (ev->attr[i])
            bytes += (alen[i] = strlen(ev->attr[i])) + 1;
    for (size_t i = 0; i < ev->next; i++)
        bytes += strlen(ev->ext[i].name) + strlen(ev->ext[i].value) + 2;
    if (ev->data)
        bytes += ev->datalen + 1;
    char *cur;
    eddy_event *d = eddy__event_packed_new(ev->next, bytes, &cur);
    if (!d)
        return NULL;
    for (int i = 0; i < A_COUNT; i++)
        if (ev->attr[i])
            d->attr[i] = eddy__event_packed_put(&cur, ev->attr[i], alen[i]);
    for (size_t i = 0; i < ev->next; i++) {
        const struct eddy__ext *e = &ev->ext[i];
        d->ext[i].name = eddy__event_packed_put(&cur, e->name, strlen(e->name));
        d->ext[i].value = eddy__event_packed_put(&cur, e->value, strlen(e->value));
        d->ext[i].type = e->type;
    }
    d->next = ev->next;
    if (ev->data) {
        d->data =
            (unsigned char *)eddy__event_packed_put(&cur, (const char *)ev->data, ev->datalen);
        d->datalen = ev->datalen;
    }
    return d;
}

/* ---- attributes ---- */

static eddy_status set_attr(eddy_event *ev, enum attr a, const char *value, size_t len) {
    if (!ev)
        return EDDY_ERR_INVALID_ARGUMENT;
    char *copy = NULL;
    if (value) {
        if (memchr(value, '\0', len))
            return EDDY_ERR_INVALID_ARGUMENT;
        if (!(copy = copy_n(value, len)))
            return EDDY_ERR_NOMEM;
    }
    release(ev, ev->attr[a]);
    ev->attr[a] = copy;
    return EDDY_OK;
}

eddy_status eddy__event_set_attr_n(eddy_event *ev, const char *attr, const char *value,
                                   size_t len) {
    for (int a = 0; a < A_COUNT; a++) {
        if (strcmp(attr, attr_names[a]) == 0)
            return set_attr(ev, (enum attr)a, value, len);
    }
    return EDDY_ERR_INVALID_ARGUMENT;
}

/* Required attributes cannot be cleared: NULL is refused rather than silently producing an
 * event that can never validate. */
static eddy_status set_required(eddy_event *ev, enum attr a, const char *value) {
    if (!value)
        return EDDY_ERR_INVALID_ARGUMENT;
    return set_attr(ev, a, value, strlen(value));
}

static eddy_status set_optional(eddy_event *ev, enum attr a, const char *value) {
    return set_attr(ev, a, value, value ? strlen(value) : 0);
}

eddy_status eddy_event_set_id(eddy_event *ev, const char *value) {
    return set_required(ev, A_ID, value);
}
eddy_status eddy_event_set_source(eddy_event *ev, const char *value) {
    return set_required(ev, A_SOURCE, value);
}
eddy_status eddy_event_set_type(eddy_event *ev, const char *value) {
    return set_required(ev, A_TYPE, value);
}
eddy_status eddy_event_set_subject(eddy_event *ev, const char *value) {
    return set_optional(ev, A_SUBJECT, value);
}
eddy_status eddy_event_set_time(eddy_event *ev, const char *value) {
    return set_optional(ev, A_TIME, value);
}
eddy_status eddy_event_set_datacontenttype(eddy_event *ev, const char *value) {
    return set_optional(ev, A_DATACONTENTTYPE, value);
}
eddy_status eddy_event_set_dataschema(eddy_event *ev, const char *value) {
    return set_optional(ev, A_DATASCHEMA, value);
}

static const char *get_attr(const eddy_event *ev, enum attr a) { return ev ? ev->attr[a] : NULL; }

const char *eddy_event_id(const eddy_event *ev) { return get_attr(ev, A_ID); }
const char *eddy_event_source(const eddy_event *ev) { return get_attr(ev, A_SOURCE); }
const char *eddy_event_specversion(const eddy_event *ev) { return ev ? SPECVERSION : NULL; }
const char *eddy_event_type(const eddy_event *ev) { return get_attr(ev, A_TYPE); }
const char *eddy_event_subject(const eddy_event *ev) { return get_attr(ev, A_SUBJECT); }
const char *eddy_event_time(const eddy_event *ev) { return get_attr(ev, A_TIME); }
const char *eddy_event_datacontenttype(const eddy_event *ev) {
    return get_attr(ev, A_DATACONTENTTYPE);
}
const char *eddy_event_dataschema(const eddy_event *ev) { return get_attr(ev, A_DATASCHEMA); }

/* ---- extensions ---- */

bool eddy__extension_name_ok(const char *name, size_t len) {
    if (len == 0 || len > EDDY_EXTENSION_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return false;
    }
    if (len > 15) /* longer than any reserved name ("datacontenttype") */
        return true;
    for (size_t i = 0; i < sizeof(reserved_names) / sizeof(reserved_names[0]); i++) {
        if (reserved_names[i][0] == name[0] && strlen(reserved_names[i]) == len &&
            memcmp(reserved_names[i], name, len) == 0)
            return false;
    }
    return true;
}

static struct eddy__ext *find_ext(const eddy_event *ev, const char *name) {
    for (size_t i = 0; i < ev->next; i++) {
        if (strcmp(ev->ext[i].name, name) == 0)
            return &ev->ext[i];
    }
    return NULL;
}

static const char *const type_names[] = {
    "String", "Boolean", "Integer", "Binary", "URI", "URI-reference", "Timestamp",
};

const char *eddy_ext_type_name(eddy_ext_type type) {
    return (unsigned)type < sizeof(type_names) / sizeof(type_names[0]) ? type_names[type]
                                                                       : "unknown";
}

static eddy_status set_ext(eddy_event *ev, const char *name, eddy_ext_type type, const char *value,
                           eddy_error *err) {
    if (!ev || !name)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "extension: event or name is NULL");
    size_t nlen = strlen(name);
    if (!eddy__extension_name_ok(name, nlen)) {
        char shown[64];
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "extension '%s': name must be 1 to %d characters of a-z and 0-9 and "
                          "not a core attribute or \"data\"",
                          eddy__printable(shown, sizeof(shown), name, nlen),
                          EDDY_EXTENSION_NAME_MAX);
    }
    if ((unsigned)type > EDDY_EXT_TIMESTAMP)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "extension '%s': unknown type %d", name,
                          (int)type);
    if (value && !eddy__ext_value_ok(type, value)) {
        char shown[64];
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "%s: not a CloudEvents %s: '%s'", name,
                          type_names[type],
                          eddy__printable(shown, sizeof(shown), value, strlen(value)));
    }
    eddy_status st = value ? eddy__trace_check_value(name, value, err) : EDDY_OK;
    if (st != EDDY_OK)
        return st;
    struct eddy__ext *old = find_ext(ev, name);
    if (!value) {
        if (old) {
            size_t i = (size_t)(old - ev->ext);
            release(ev, old->name);
            memmove(old, old + 1, (ev->next - i - 1) * sizeof(*old));
            ev->next--;
        }
        return EDDY_OK;
    }
    if (!old) {
        if (eddy__event_append_extension_n(ev, name, nlen, value, strlen(value)) != EDDY_OK)
            return eddy__fail(err, EDDY_ERR_NOMEM, "extension '%s': out of memory", name);
        ev->ext[ev->next - 1].type = type;
        return EDDY_OK;
    }
    /* Replacing keeps the original position: insertion order is the first insertion's. */
    struct eddy__ext e = ext_make(name, nlen, value, strlen(value));
    if (!e.name)
        return eddy__fail(err, EDDY_ERR_NOMEM, "extension '%s': out of memory", name);
    e.type = type;
    release(ev, old->name);
    *old = e;
    return EDDY_OK;
}

eddy_status eddy_event_set_extension(eddy_event *ev, const char *name, const char *value,
                                     eddy_error *err) {
    return set_ext(ev, name, EDDY_EXT_STRING, value, err);
}

eddy_status eddy_event_set_ext_typed(eddy_event *ev, const char *name, eddy_ext_type type,
                                     const char *value, eddy_error *err) {
    return set_ext(ev, name, type, value, err);
}

eddy_status eddy_event_set_ext_int(eddy_event *ev, const char *name, int32_t value,
                                   eddy_error *err) {
    char text[16];
    snprintf(text, sizeof(text), "%ld", (long)value);
    return set_ext(ev, name, EDDY_EXT_INTEGER, text, err);
}

eddy_status eddy_event_set_ext_bool(eddy_event *ev, const char *name, bool value, eddy_error *err) {
    return set_ext(ev, name, EDDY_EXT_BOOLEAN, value ? "true" : "false", err);
}

eddy_status eddy_event_set_ext_binary(eddy_event *ev, const char *name, const void *bytes,
                                      size_t len, eddy_error *err) {
    if (!bytes && len)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "extension: bytes is NULL");
    char *text = eddy__base64_encode(bytes ? bytes : "", len);
    if (!text)
        return eddy__fail(err, EDDY_ERR_NOMEM, "extension: out of memory");
    eddy_status st = set_ext(ev, name, EDDY_EXT_BINARY, text, err);
    free(text);
    return st;
}

eddy_status eddy_event_ext_type(const eddy_event *ev, const char *name, eddy_ext_type *type) {
    const struct eddy__ext *e = ev && name ? find_ext(ev, name) : NULL;
    if (!e)
        return EDDY_ERR_NOT_FOUND;
    if (type)
        *type = e->type;
    return EDDY_OK;
}

eddy_status eddy_event_extension_type_at(const eddy_event *ev, size_t i, eddy_ext_type *type) {
    if (!ev || i >= ev->next)
        return EDDY_ERR_INVALID_ARGUMENT;
    if (type)
        *type = ev->ext[i].type;
    return EDDY_OK;
}

/* The extension called name when it has the type; *st says why not otherwise. */
static const struct eddy__ext *typed_ext(const eddy_event *ev, const char *name, eddy_ext_type type,
                                         eddy_status *st) {
    const struct eddy__ext *e = ev && name ? find_ext(ev, name) : NULL;
    *st = !e ? EDDY_ERR_NOT_FOUND : e->type != type ? EDDY_ERR_INVALID_ARGUMENT : EDDY_OK;
    return *st == EDDY_OK ? e : NULL;
}

eddy_status eddy_event_ext_int(const eddy_event *ev, const char *name, int32_t *value) {
    eddy_status st;
    const struct eddy__ext *e = typed_ext(ev, name, EDDY_EXT_INTEGER, &st);
    if (e && !eddy__ce_int_parse(e->value, value))
        return EDDY_ERR_MALFORMED; /* only a view over bytes never validated */
    return st;
}

eddy_status eddy_event_ext_bool(const eddy_event *ev, const char *name, bool *value) {
    eddy_status st;
    const struct eddy__ext *e = typed_ext(ev, name, EDDY_EXT_BOOLEAN, &st);
    if (e && value)
        *value = strcmp(e->value, "true") == 0;
    return st;
}

eddy_status eddy_event_ext_binary(const eddy_event *ev, const char *name, void **bytes,
                                  size_t *len) {
    eddy_status st;
    const struct eddy__ext *e = typed_ext(ev, name, EDDY_EXT_BINARY, &st);
    if (!e)
        return st;
    if (!bytes || !len)
        return EDDY_ERR_INVALID_ARGUMENT;
    unsigned char *out;
    bool nomem;
    if (!eddy__base64_decode(e->value, strlen(e->value), &out, len, &nomem))
        return nomem ? EDDY_ERR_NOMEM : EDDY_ERR_MALFORMED;
    *bytes = out;
    return EDDY_OK;
}

const char *eddy_event_extension(const eddy_event *ev, const char *name) {
    if (!ev || !name)
        return NULL;
    const struct eddy__ext *e = find_ext(ev, name);
    return e ? e->value : NULL;
}

size_t eddy_event_extension_count(const eddy_event *ev) { return ev ? ev->next : 0; }

eddy_status eddy_event_extension_at(const eddy_event *ev, size_t i, const char **name,
                                    const char **value) {
    if (!ev || i >= ev->next)
        return EDDY_ERR_INVALID_ARGUMENT;
    if (name)
        *name = ev->ext[i].name;
    if (value)
        *value = ev->ext[i].value;
    return EDDY_OK;
}

/* ---- data ---- */

static unsigned char *copy_data(const void *data, size_t len) {
    if (len == SIZE_MAX)
        return NULL;
    unsigned char *c = malloc(len + 1);
    if (!c)
        return NULL;
    if (len)
        memcpy(c, data, len);
    c[len] = '\0';
    return c;
}

eddy_status eddy_event_set_data(eddy_event *ev, const void *data, size_t len) {
    if (!ev || (!data && len))
        return EDDY_ERR_INVALID_ARGUMENT;
    unsigned char *copy = NULL;
    /* Non-NULL data of length 0 is present-but-empty, which an entry keeps as an empty
     * "data" field; only NULL means "no data". */
    if (data && !(copy = copy_data(data, len)))
        return EDDY_ERR_NOMEM;
    release(ev, ev->data);
    ev->data = copy;
    ev->datalen = copy ? len : 0;
    return EDDY_OK;
}

eddy_status eddy__event_set_data_typed(eddy_event *ev, const void *data, size_t len,
                                       const char *content_type) {
    if (!ev || !data || !content_type)
        return EDDY_ERR_INVALID_ARGUMENT;
    unsigned char *copy = copy_data(data, len);
    char *ct = copy_n(content_type, strlen(content_type));
    if (!copy || !ct) {
        free(copy);
        free(ct);
        return EDDY_ERR_NOMEM;
    }
    release(ev, ev->data);
    ev->data = copy;
    ev->datalen = len;
    release(ev, ev->attr[A_DATACONTENTTYPE]);
    ev->attr[A_DATACONTENTTYPE] = ct;
    return EDDY_OK;
}

const void *eddy_event_data(const eddy_event *ev, size_t *len) {
    if (len)
        *len = ev && ev->data ? ev->datalen : 0;
    return ev ? ev->data : NULL;
}

/* ---- validation ---- */

static bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* RFC 3986 scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ), over s[0..len). */
static bool scheme_ok(const char *s, size_t len) {
    if (len == 0 || !is_alpha(s[0]))
        return false;
    for (size_t i = 1; i < len; i++) {
        if (!is_alpha(s[i]) && !is_digit(s[i]) && s[i] != '+' && s[i] != '-' && s[i] != '.')
            return false;
    }
    return true;
}

/* The characters a URI may contain: RFC 3986 unreserved, gen-delims, sub-delims and
 * %-escapes. Bytes above 0x7f pass so that IRIs (UTF-8) are accepted; spaces, control
 * characters and the ASCII that RFC 3986 never allows do not. At most one '#'. */
static bool uri_chars_ok(const char *s) {
    bool fragment = false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c >= 0x80 || is_alpha((char)c) || is_digit((char)c))
            continue;
        if (c == '%') {
            if (!is_hex(p[1]) || !is_hex(p[2]))
                return false;
            p += 2;
            continue;
        }
        if (c == '#') {
            if (fragment)
                return false;
            fragment = true;
            continue;
        }
        if (!strchr("-._~:/?[]@!$&'()*+,;=", c))
            return false;
    }
    return true;
}

/* RFC 3986 URI-reference: a URI, or a relative reference whose first segment has no ':'.
 * So a ':' before any '/', '?' or '#' must end a valid scheme. */
bool eddy__uri_reference_ok(const char *s) {
    if (!*s || !uri_chars_ok(s))
        return false;
    size_t head = strcspn(s, ":/?#");
    if (s[head] == ':')
        return scheme_ok(s, head);
    return true;
}

bool eddy__absolute_uri_ok(const char *s) {
    size_t head = strcspn(s, ":/?#");
    return s[head] == ':' && scheme_ok(s, head) && uri_chars_ok(s);
}

/* Reads exactly n digits at *p as a number and advances. */
static bool take_digits(const char **p, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i]))
            return false;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return true;
}

static bool take_char(const char **p, char c) {
    if (**p != c)
        return false;
    (*p)++;
    return true;
}

static int days_in_month(int year, int month) {
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return month == 2 && leap ? 29 : days[month - 1];
}

/* RFC 3339 date-time: full-date ("T"/"t") partial-time [time-secfrac] time-offset, where the
 * offset is "Z"/"z" or ("+"/"-") hh ":" mm. Field ranges are checked (day against the month,
 * leap years included); a second of 60 is allowed for leap seconds. */
bool eddy__rfc3339_ok(const char *s) {
    const char *p = s;
    int year, month, day, hour, minute, second;
    if (!take_digits(&p, 4, &year) || !take_char(&p, '-') || !take_digits(&p, 2, &month) ||
        !take_char(&p, '-') || !take_digits(&p, 2, &day))
        return false;
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
        return false;
    if (*p != 'T' && *p != 't')
        return false;
    p++;
    if (!take_digits(&p, 2, &hour) || !take_char(&p, ':') || !take_digits(&p, 2, &minute) ||
        !take_char(&p, ':') || !take_digits(&p, 2, &second))
        return false;
    if (hour > 23 || minute > 59 || second > 60)
        return false;
    if (*p == '.') {
        p++;
        if (!is_digit(*p))
            return false;
        while (is_digit(*p))
            p++;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om;
        p++;
        if (!take_digits(&p, 2, &oh) || !take_char(&p, ':') || !take_digits(&p, 2, &om))
            return false;
        if (oh > 23 || om > 59)
            return false;
    } else {
        return false;
    }
    return *p == '\0';
}

/* RFC 7230 tchar. */
static bool is_tchar(char c) {
    return is_alpha(c) || is_digit(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool take_token(const char **p) {
    const char *start = *p;
    while (is_tchar(**p))
        (*p)++;
    return *p > start;
}

static void skip_ows(const char **p) {
    while (**p == ' ' || **p == '\t')
        (*p)++;
}

/* RFC 7230 quoted-string: qdtext is HTAB, SP, 0x21, 0x23-0x5B, 0x5D-0x7E or obs-text; a
 * backslash quotes HTAB, SP, VCHAR or obs-text. */
static bool take_quoted(const char **p) {
    const unsigned char *q = (const unsigned char *)*p;
    if (*q++ != '"')
        return false;
    for (;;) {
        unsigned char c = *q++;
        if (c == '"')
            break;
        if (c == '\\') {
            c = *q++;
            if (!(c == '\t' || (c >= 0x20 && c != 0x7f)))
                return false;
        } else if (!(c == '\t' || (c >= 0x20 && c != 0x7f))) {
            return false; /* includes the terminating NUL: unclosed quote */
        }
    }
    *p = (const char *)q;
    return true;
}

/* RFC 7231 media-type = type "/" subtype *( OWS ";" OWS token "=" ( token / quoted-string ) ) */
static bool media_type_ok(const char *s) {
    const char *p = s;
    if (!take_token(&p) || !take_char(&p, '/') || !take_token(&p))
        return false;
    for (;;) {
        skip_ows(&p);
        if (*p == '\0')
            return p[-1] != ' ' && p[-1] != '\t';
        if (!take_char(&p, ';'))
            return false;
        skip_ows(&p);
        if (!take_token(&p) || !take_char(&p, '='))
            return false;
        if (*p == '"' ? !take_quoted(&p) : !take_token(&p))
            return false;
    }
}

static eddy_status required(const eddy_event *ev, enum attr a, eddy_error *err) {
    if (!ev->attr[a])
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "%s: required attribute is missing",
                          attr_names[a]);
    if (!ev->attr[a][0])
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "%s: must not be empty", attr_names[a]);
    return EDDY_OK;
}

/* Attributes are checked in the order the CloudEvents spec lists them, so the detail always
 * names the first bad one. */
eddy_status eddy_event_validate(const eddy_event *ev, eddy_error *err) {
    if (!ev)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "event is NULL");
    eddy_status st;
    char why[48];
    size_t pos;
    for (int a = 0; a < A_COUNT; a++) {
        const char *t = ev->attr[a];
        if (t && !eddy__ce_string_ok(t, strlen(t), &pos, why, sizeof(why)))
            return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                              "%s: not a CloudEvents String: %s at byte %zu", attr_names[a], why,
                              pos);
    }
    for (size_t i = 0; i < ev->next; i++) {
        const char *name = ev->ext[i].name, *t = ev->ext[i].value;
        if (!eddy__ce_string_ok(t, strlen(t), &pos, why, sizeof(why)))
            return eddy__fail(
                err, EDDY_ERR_INVALID_EVENT, "%s: not a CloudEvents String: %s at byte %zu",
                eddy__extension_name_ok(name, strlen(name)) ? name : "extension", why, pos);
    }
    if ((st = required(ev, A_ID, err)) != EDDY_OK || (st = required(ev, A_SOURCE, err)) != EDDY_OK)
        return st;
    if (!eddy__uri_reference_ok(ev->attr[A_SOURCE]))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "source: not a URI reference");
    if ((st = required(ev, A_TYPE, err)) != EDDY_OK)
        return st;
    const char *v = ev->attr[A_DATACONTENTTYPE];
    if (v && !media_type_ok(v))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "datacontenttype: not a media type (type/subtype[;parameters])");
    v = ev->attr[A_DATASCHEMA];
    if (v && !eddy__absolute_uri_ok(v))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "dataschema: not an absolute URI");
    v = ev->attr[A_SUBJECT];
    if (v && !*v)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "subject: must not be empty when set");
    v = ev->attr[A_TIME];
    if (v && !eddy__rfc3339_ok(v))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "time: not an RFC 3339 timestamp");
    /* Names are checked on insertion; checking again keeps validate the one complete
     * statement of the rules. */
    for (size_t i = 0; i < ev->next; i++) {
        const char *name = ev->ext[i].name;
        if (!eddy__extension_name_ok(name, strlen(name))) {
            char shown[64];
            return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "extension '%s': invalid name",
                              eddy__printable(shown, sizeof(shown), name, strlen(name)));
        }
        if (!eddy__ext_value_ok(ev->ext[i].type, ev->ext[i].value))
            return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "%s: not a CloudEvents %s", name,
                              eddy_ext_type_name(ev->ext[i].type));
    }
    return EDDY_OK;
}

/* The size of the entry eddy__entry_encode writes (field names included), so that an event
 * accepted against a size limit at publish is not refused as too large when it is read. */
size_t eddy_event_size(const eddy_event *ev) {
    if (!ev)
        return 0;
    size_t n = strlen("specversion") + strlen(SPECVERSION);
    for (int a = 0; a < A_COUNT; a++) {
        if (ev->attr[a])
            n += strlen(attr_names[a]) + strlen(ev->attr[a]);
    }
    for (size_t i = 0; i < ev->next; i++)
        n += 2 + strlen(ev->ext[i].name) + strlen(ev->ext[i].value) +
             strlen(eddy__ext_type_suffix(ev->ext[i].type));
    if (ev->data)
        n += strlen("data") + ev->datalen;
    return n;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* CloudEvents in the JSON event format (structured mode), both ways, and JSON batches.
 *
 * Reading checks the whole text as strict JSON first (json_read.h), so a syntax error is
 * EDDY_ERR_MALFORMED with its byte offset and everything after that only meets well-formed
 * JSON; then it walks the object once, keeping the members it needs, builds the event and
 * validates it like any other. Extensions are collected first and checked for duplicates by
 * sorting, so an object with many members costs O(n log n), not O(n^2).
 *
 * Data (the JSON format's section 3.1): `data_base64` holds binary data; `data` holds JSON when
 * the content type is JSON or absent (kept as its text, without insignificant whitespace) and a
 * string otherwise. Writing makes the same decision from the content type and the bytes, and
 * falls back to `data_base64` whenever the bytes could not be read back unchanged otherwise. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "eddy/event.h"
#include "error.h"
#include "events/event_internal.h"
#include "util/cetext.h"
#include "util/json.h"
#include "util/json_read.h"

static const char *const core_names[] = {
    "specversion", "id", "source", "type", "subject", "time", "datacontenttype", "dataschema",
};
#define CORE_COUNT (sizeof(core_names) / sizeof(core_names[0]))

/* The media type's "type/subtype", lowercased into buf; "" when there is none. */
static const char *essence(const char *ct, char *buf, size_t size) {
    size_t n = 0;
    if (ct) {
        while (*ct == ' ' || *ct == '\t')
            ct++;
        for (; *ct && *ct != ';' && *ct != ' ' && *ct != '\t' && n + 1 < size; ct++)
            buf[n++] = (char)(*ct >= 'A' && *ct <= 'Z' ? *ct + 32 : *ct);
    }
    buf[n] = '\0';
    return buf;
}

static bool ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

/* JSON data: the content type is absent, application/json, text/json or anything "+json". */
static bool json_content(const char *ct) {
    char buf[128];
    const char *e = essence(ct, buf, sizeof(buf));
    return !ct || strcmp(e, "application/json") == 0 || strcmp(e, "text/json") == 0 ||
           ends_with(e, "+json");
}

/* Text a JSON string can carry faithfully: text/ types, XML and a few other textual types. */
static bool text_content(const char *ct) {
    char buf[128];
    const char *e = essence(ct, buf, sizeof(buf));
    return ct && (strncmp(e, "text/", 5) == 0 || ends_with(e, "/xml") || ends_with(e, "+xml") ||
                  strcmp(e, "application/javascript") == 0 ||
                  strcmp(e, "application/x-www-form-urlencoded") == 0 || ends_with(e, "/yaml") ||
                  ends_with(e, "/x-yaml") || ends_with(e, "+yaml"));
}

/* UTF-8 without NUL bytes (a JSON string may carry control characters, escaped). */
static bool utf8_text(const unsigned char *s, size_t len) {
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = eddy__utf8_decode(s + i, len - i, &cp);
        if (n == 0 || cp == 0)
            return false;
        i += n;
    }
    return true;
}

/* ---- reading ---------------------------------------------------------------------------- */

struct jext {
    char *name, *value;
    size_t nlen, vlen;
    eddy_ext_type type;
};

struct jevent {
    char *core[CORE_COUNT];
    size_t corelen[CORE_COUNT];
    unsigned seen; /* core members met, null ones included */
    struct jext *ext;
    size_t next, extcap;
    bool has_data, has_b64, data_seen, b64_seen;
    size_t data_start, data_end, b64_start, b64_end;
};

static void jevent_free(struct jevent *je) {
    for (size_t i = 0; i < CORE_COUNT; i++)
        free(je->core[i]);
    for (size_t i = 0; i < je->next; i++) {
        free(je->ext[i].name);
        free(je->ext[i].value);
    }
    free(je->ext);
}

static int jext_cmp(const void *a, const void *b) {
    const struct jext *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static eddy_status nomem(eddy_error *err) {
    return eddy__fail(err, EDDY_ERR_NOMEM, "JSON: out of memory");
}

static eddy_status wrong(eddy_error *err, const char *name, const char *what) {
    char shown[64];
    return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "%s: %s",
                      eddy__printable(shown, sizeof(shown), name, strlen(name)), what);
}

/* The kind of the value at the reader, by its first byte. */
static const char *kind_name(char c) {
    switch (c) {
    case '"':
        return "a string";
    case '{':
        return "an object";
    case '[':
        return "an array";
    case 't':
    case 'f':
        return "a boolean";
    case 'n':
        return "null";
    default:
        return "a number";
    }
}

static eddy_status read_extension(eddy__jr *r, struct jevent *je, char *name, size_t nlen,
                                  eddy_error *err) {
    char c = eddy__jr_peek(r);
    if (!eddy__extension_name_ok(name, nlen)) {
        eddy_status st = wrong(err, name,
                               "not a CloudEvents attribute name (1 to 255 characters of a-z "
                               "and 0-9, not a core attribute)");
        free(name);
        return st;
    }
    size_t start, end;
    struct jext x = {name, NULL, nlen, 0, EDDY_EXT_STRING};
    eddy_status st = EDDY_OK;
    if (c == 'n') { /* null: unset, but kept until duplicates are ruled out */
        eddy__jr_value(r, NULL, NULL);
    } else if (c == '"') {
        if (!eddy__jr_string(r, &x.value, &x.vlen))
            st = nomem(err);
    } else if (c == '{' || c == '[') {
        char why[64];
        snprintf(why, sizeof(why), "an extension cannot be %s", kind_name(c));
        st = wrong(err, name, why);
    } else {
        eddy__jr_value(r, &start, &end);
        x.type = c == 't' || c == 'f' ? EDDY_EXT_BOOLEAN : EDDY_EXT_INTEGER;
        x.vlen = end - start;
        if (!(x.value = malloc(x.vlen + 1))) {
            st = nomem(err);
        } else {
            memcpy(x.value, r->s + start, x.vlen);
            x.value[x.vlen] = '\0';
            if (x.type == EDDY_EXT_INTEGER && !eddy__ce_int_parse(x.value, NULL))
                st = wrong(err, name,
                           "a number must be a CloudEvents Integer (a whole number "
                           "from -2147483648 to 2147483647)");
        }
    }
    if (st == EDDY_OK && je->next == je->extcap) {
        size_t cap = je->extcap ? je->extcap * 2 : 8;
        struct jext *e = realloc(je->ext, cap * sizeof(*e));
        if (!e)
            st = nomem(err);
        else
            je->ext = e, je->extcap = cap;
    }
    if (st != EDDY_OK) {
        free(x.name);
        free(x.value);
        return st;
    }
    je->ext[je->next++] = x;
    return EDDY_OK;
}

/* Reads the members of one object (the reader is at its '{'; the text is known to be JSON). */
static eddy_status read_members(eddy__jr *r, struct jevent *je, eddy_error *err) {
    if (eddy__jr_peek(r) != '{') {
        char why[64];
        snprintf(why, sizeof(why), "an event must be a JSON object, not %s",
                 kind_name(eddy__jr_peek(r)));
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "event: %s", why);
    }
    eddy__jr_take(r, '{');
    if (eddy__jr_take(r, '}'))
        return EDDY_OK;
    do {
        char *name;
        size_t nlen;
        if (!eddy__jr_string(r, &name, &nlen))
            return nomem(err);
        eddy__jr_take(r, ':');
        char c = eddy__jr_peek(r);
        size_t k = 0;
        while (k < CORE_COUNT && strcmp(core_names[k], name) != 0)
            k++;
        eddy_status st = EDDY_OK;
        if (memchr(name, '\0', nlen)) {
            st = wrong(err, "member", "a NUL character in a member name");
        } else if (k < CORE_COUNT) {
            if (je->seen & (1u << k))
                st = wrong(err, name, "duplicate member");
            else if (c != '"' && c != 'n') {
                char why[64];
                snprintf(why, sizeof(why), "must be a string, not %s", kind_name(c));
                st = wrong(err, name, why);
            } else {
                je->seen |= 1u << k;
                if (c == 'n' ? !eddy__jr_value(r, NULL, NULL)
                             : !eddy__jr_string(r, &je->core[k], &je->corelen[k]))
                    st = nomem(err);
            }
        } else if (strcmp(name, "data") == 0 || strcmp(name, "data_base64") == 0) {
            bool b64 = name[4] == '_';
            if (b64 ? je->b64_seen : je->data_seen)
                st = wrong(err, name, "duplicate member");
            else if (b64 && c != '"' && c != 'n') {
                char why[64];
                snprintf(why, sizeof(why), "must be a base64 string, not %s", kind_name(c));
                st = wrong(err, name, why);
            } else {
                size_t start, end;
                eddy__jr_value(r, &start, &end);
                if (b64) {
                    je->b64_seen = true;
                    je->has_b64 = c != 'n';
                    je->b64_start = start, je->b64_end = end;
                } else {
                    je->data_seen = true;
                    je->has_data = c != 'n';
                    je->data_start = start, je->data_end = end;
                }
            }
        } else {
            st = read_extension(r, je, name, nlen, err);
            name = NULL; /* read_extension took it */
        }
        free(name);
        if (st != EDDY_OK)
            return st;
    } while (eddy__jr_take(r, ','));
    eddy__jr_take(r, '}');
    return r->failed ? nomem(err) : EDDY_OK;
}

static eddy_status set_data_from(const eddy__jr *r, const struct jevent *je, eddy_event *ev,
                                 eddy_error *err) {
    if (je->has_data && je->has_b64)
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "data: an event carries data or data_base64, not both");
    if (je->has_b64) {
        eddy__jr sub;
        eddy__jr_init(&sub, r->s + je->b64_start, je->b64_end - je->b64_start);
        char *s;
        size_t n;
        if (!eddy__jr_string(&sub, &s, &n))
            return nomem(err);
        unsigned char *bytes;
        size_t len;
        bool oom;
        bool ok = eddy__base64_decode(s, n, &bytes, &len, &oom);
        free(s);
        if (!ok)
            return oom ? nomem(err)
                       : eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                                    "data_base64: not base64 (RFC 4648, with padding)");
        eddy_status st = eddy_event_set_data(ev, bytes, len);
        free(bytes);
        return st == EDDY_OK ? EDDY_OK : nomem(err);
    }
    if (!je->has_data)
        return EDDY_OK;
    const char *text = r->s + je->data_start;
    size_t n = je->data_end - je->data_start;
    if (json_content(eddy_event_datacontenttype(ev))) {
        char *min = malloc(n ? n : 1);
        if (!min)
            return nomem(err);
        size_t m = eddy__json_minify(text, n, min);
        eddy_status st = eddy_event_set_data(ev, min, m);
        free(min);
        return st == EDDY_OK ? EDDY_OK : nomem(err);
    }
    if (*text != '"')
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "data: must be a JSON string when datacontenttype (%s) is not JSON; "
                          "binary data goes in data_base64",
                          eddy_event_datacontenttype(ev));
    eddy__jr sub;
    eddy__jr_init(&sub, text, n);
    char *bytes;
    size_t len;
    if (!eddy__jr_string(&sub, &bytes, &len))
        return nomem(err);
    eddy_status st = eddy_event_set_data(ev, bytes, len);
    free(bytes);
    return st == EDDY_OK ? EDDY_OK : nomem(err);
}

/* Builds the event the members describe, and validates it. */
static eddy_status build(const eddy__jr *r, struct jevent *je, eddy_event **out, eddy_error *err) {
    if (!je->core[0])
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT,
                          "specversion: required attribute is missing");
    if (strcmp(je->core[0], "1.0") != 0) {
        char shown[32];
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "specversion: must be \"1.0\", not \"%s\"",
                          eddy__printable(shown, sizeof(shown), je->core[0], strlen(je->core[0])));
    }
    if (je->next > 1) { /* sorted by reference: the event keeps the members' order */
        const struct jext **by = malloc(je->next * sizeof(*by));
        if (!by)
            return nomem(err);
        for (size_t i = 0; i < je->next; i++)
            by[i] = &je->ext[i];
        qsort(by, je->next, sizeof(*by), jext_cmp);
        const char *dup = NULL;
        for (size_t i = 1; i < je->next && !dup; i++)
            if (strcmp(by[i - 1]->name, by[i]->name) == 0)
                dup = by[i]->name;
        free(by);
        if (dup)
            return wrong(err, dup, "duplicate member");
    }
    eddy_event *ev = eddy_event_new();
    if (!ev)
        return nomem(err);
    eddy_status st = EDDY_OK;
    for (size_t k = 1; k < CORE_COUNT && st == EDDY_OK; k++) {
        if (!je->core[k])
            continue;
        if (memchr(je->core[k], '\0', je->corelen[k]))
            st = wrong(err, core_names[k], "not a CloudEvents String: NUL character");
        else if (eddy__event_set_attr_n(ev, core_names[k], je->core[k], je->corelen[k]) != EDDY_OK)
            st = nomem(err);
    }
    for (size_t i = 0; i < je->next && st == EDDY_OK; i++) {
        struct jext *x = &je->ext[i];
        if (!x->value)
            continue; /* null */
        if (memchr(x->value, '\0', x->vlen))
            st = wrong(err, x->name, "not a CloudEvents String: NUL character");
        else if (eddy__event_append_extension_n(ev, x->name, x->nlen, x->value, x->vlen) != EDDY_OK)
            st = nomem(err);
        else
            ev->ext[ev->next - 1].type = x->type;
    }
    if (st == EDDY_OK)
        st = set_data_from(r, je, ev, err);
    if (st == EDDY_OK)
        st = eddy_event_validate(ev, err);
    if (st != EDDY_OK) {
        eddy_event_free(ev);
        return st;
    }
    *out = ev;
    return EDDY_OK;
}

static eddy_status read_event(eddy__jr *r, eddy_event **out, eddy_error *err) {
    struct jevent je;
    memset(&je, 0, sizeof(je));
    eddy_status st = read_members(r, &je, err);
    if (st == EDDY_OK)
        st = build(r, &je, out, err);
    jevent_free(&je);
    return st;
}

static eddy_status check_syntax(const char *json, size_t len, eddy_error *err) {
    eddy__jr r;
    eddy__jr_init(&r, json, len);
    if (eddy__jr_value(&r, NULL, NULL) && eddy__jr_end(&r))
        return EDDY_OK;
    return eddy__fail(err, EDDY_ERR_MALFORMED, "JSON: %s at byte %zu", r.why, r.errpos);
}

eddy_status eddy_event_from_json(const char *json, size_t len, eddy_event **out, eddy_error *err) {
    if (out)
        *out = NULL;
    if (!json || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "JSON: NULL argument");
    eddy_status st = check_syntax(json, len, err);
    if (st != EDDY_OK)
        return st;
    eddy__jr r;
    eddy__jr_init(&r, json, len);
    return read_event(&r, out, err);
}

eddy_status eddy_event_batch_from_json(const char *json, size_t len, eddy_event ***events,
                                       size_t *count, eddy_error *err) {
    if (events)
        *events = NULL;
    if (count)
        *count = 0;
    if (!json || !events || !count)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "JSON: NULL argument");
    eddy_status st = check_syntax(json, len, err);
    if (st != EDDY_OK)
        return st;
    eddy__jr r;
    eddy__jr_init(&r, json, len);
    if (!eddy__jr_take(&r, '['))
        return eddy__fail(err, EDDY_ERR_INVALID_EVENT, "batch: must be a JSON array, not %s",
                          kind_name(eddy__jr_peek(&r)));
    eddy_event **evs = NULL;
    size_t n = 0, cap = 0;
    if (!eddy__jr_take(&r, ']')) {
        do {
            if (n == cap) {
                size_t c = cap ? cap * 2 : 8;
                eddy_event **e = realloc(evs, c * sizeof(*e));
                if (!e) {
                    st = nomem(err);
                    break;
                }
                evs = e, cap = c;
            }
            eddy_error why = {0};
            if ((st = read_event(&r, &evs[n], &why)) != EDDY_OK) {
                eddy__fail(err, st, "event %zu: %s", n, why.detail);
                break;
            }
            n++;
        } while (eddy__jr_take(&r, ','));
    }
    if (st != EDDY_OK) {
        for (size_t i = 0; i < n; i++)
            eddy_event_free(evs[i]);
        free(evs);
        return st;
    }
    *events = evs;
    *count = n;
    return EDDY_OK;
}

/* ---- writing ---------------------------------------------------------------------------- */

static eddy_status write_data(eddy__json *j, const eddy_event *ev) {
    size_t len;
    const unsigned char *data = eddy_event_data(ev, &len);
    if (!data)
        return EDDY_OK;
    const char *ct = eddy_event_datacontenttype(ev);
    if (json_content(ct) && eddy__json_valid((const char *)data, len)) {
        char *min = malloc(len ? len : 1);
        if (!min)
            return EDDY_ERR_NOMEM;
        size_t m = eddy__json_minify((const char *)data, len, min);
        eddy__json_raw(j, "data", min, m);
        free(min);
        return EDDY_OK;
    }
    if (text_content(ct) && utf8_text(data, len)) {
        eddy__json_str(j, "data", (const char *)data); /* NUL-terminated past len, none inside */
        return EDDY_OK;
    }
    char *b64 = eddy__base64_encode(data, len);
    if (!b64)
        return EDDY_ERR_NOMEM;
    eddy__json_str(j, "data_base64", b64);
    free(b64);
    return EDDY_OK;
}

static eddy_status write_event(eddy__json *j, const eddy_event *ev, eddy_error *err) {
    eddy_status st = eddy_event_validate(ev, err);
    if (st != EDDY_OK)
        return st;
    eddy__json_object(j, NULL);
    eddy__json_str(j, "specversion", eddy_event_specversion(ev));
    static const char *(*const get[])(const eddy_event *) = {
        eddy_event_id,   eddy_event_source,          eddy_event_type,       eddy_event_subject,
        eddy_event_time, eddy_event_datacontenttype, eddy_event_dataschema,
    };
    for (size_t k = 0; k < sizeof(get) / sizeof(get[0]); k++) {
        const char *v = get[k](ev);
        if (v)
            eddy__json_str(j, core_names[k + 1], v);
    }
    for (size_t i = 0; i < eddy_event_extension_count(ev); i++) {
        const char *name, *value;
        eddy_ext_type type = EDDY_EXT_STRING;
        eddy_event_extension_at(ev, i, &name, &value);
        eddy_event_extension_type_at(ev, i, &type);
        if (type == EDDY_EXT_INTEGER || type == EDDY_EXT_BOOLEAN)
            eddy__json_raw(j, name, value, strlen(value)); /* validated: canonical JSON */
        else
            eddy__json_str(j, name, value);
    }
    if (write_data(j, ev) != EDDY_OK)
        return nomem(err);
    eddy__json_end(j);
    return EDDY_OK;
}

static eddy_status finish(eddy__json *j, char **out, size_t *len, eddy_error *err) {
    char *doc = eddy__json_finish(j);
    if (!doc)
        return nomem(err);
    *out = doc;
    if (len)
        *len = strlen(doc);
    return EDDY_OK;
}

eddy_status eddy_event_to_json(const eddy_event *ev, char **out, size_t *len, eddy_error *err) {
    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if (!ev || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "JSON: NULL argument");
    eddy__json j;
    eddy__json_init(&j);
    eddy_status st = write_event(&j, ev, err);
    if (st != EDDY_OK) {
        free(eddy__json_finish(&j));
        return st;
    }
    return finish(&j, out, len, err);
}

eddy_status eddy_event_batch_to_json(const eddy_event *const *events, size_t count, char **out,
                                     size_t *len, eddy_error *err) {
    if (out)
        *out = NULL;
    if (len)
        *len = 0;
    if ((!events && count) || !out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "JSON: NULL argument");
    eddy__json j;
    eddy__json_init(&j);
    eddy__json_array(&j, NULL);
    for (size_t i = 0; i < count; i++) {
        eddy_error why = {0};
        eddy_status st = events[i] ? write_event(&j, events[i], &why) : EDDY_ERR_INVALID_ARGUMENT;
        if (st != EDDY_OK) {
            free(eddy__json_finish(&j));
            return eddy__fail(err, st, "event %zu: %s", i, events[i] ? why.detail : "NULL");
        }
    }
    eddy__json_end(&j);
    return finish(&j, out, len, err);
}

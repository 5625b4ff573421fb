/* SPDX-License-Identifier: BSD-3-Clause */
/* The strict JSON pull reader; see json_read.h. */
#include "util/json_read.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/cetext.h"

void eddy__jr_init(eddy__jr *r, const char *s, size_t len) {
    memset(r, 0, sizeof(*r));
    r->s = s;
    r->len = s ? len : 0;
}

bool eddy__jr_fail(eddy__jr *r, const char *why) {
    if (r->pos >= r->len && !r->nomem)
        why = "unexpected end of input"; /* whatever was expected, nothing came */
    if (!r->failed) {
        r->failed = true;
        r->errpos = r->pos;
        size_t n = strlen(why);
        if (n >= sizeof(r->why))
            n = sizeof(r->why) - 1;
        memcpy(r->why, why, n);
        r->why[n] = '\0';
    }
    return false;
}

static void ws(eddy__jr *r) {
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        r->pos++;
    }
}

char eddy__jr_peek(eddy__jr *r) {
    if (r->failed)
        return 0;
    ws(r);
    return r->pos < r->len ? r->s[r->pos] : 0;
}

bool eddy__jr_take(eddy__jr *r, char c) {
    if (r->failed)
        return false;
    ws(r);
    if (r->pos < r->len && r->s[r->pos] == c) {
        r->pos++;
        return true;
    }
    return false;
}

bool eddy__jr_expect(eddy__jr *r, char c) {
    if (eddy__jr_take(r, c))
        return true;
    char why[32] = "expected ' '";
    why[10] = c;
    return eddy__jr_fail(r, r->pos >= r->len ? "unexpected end of input" : why);
}

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static bool hex4(eddy__jr *r, uint32_t *out) {
    if (r->len - r->pos < 4)
        return eddy__jr_fail(r, "truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(r->s[r->pos + (size_t)i]);
        if (h < 0)
            return eddy__jr_fail(r, "bad \\u escape");
        v = v << 4 | (uint32_t)h;
    }
    r->pos += 4;
    *out = v;
    return true;
}

static size_t put_utf8(char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6);
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12);
        o[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | cp >> 18);
    o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Scans a string at r->pos (the opening quote), writing its unescaped bytes to out when out is
 * not NULL (room for the raw length suffices: an escape never grows). */
static bool scan_string(eddy__jr *r, char *out, size_t *outlen) {
    if (r->pos >= r->len || r->s[r->pos] != '"')
        return eddy__jr_fail(r, "expected a string");
    r->pos++;
    size_t k = 0;
    const unsigned char *s = (const unsigned char *)r->s;
    for (;;) {
        if (r->pos >= r->len)
            return eddy__jr_fail(r, "unterminated string");
        unsigned char c = s[r->pos];
        if (c == '"') {
            r->pos++;
            break;
        }
        if (c < 0x20)
            return eddy__jr_fail(r, "control character in a string");
        if (c == '\\') {
            if (r->pos + 1 >= r->len)
                return eddy__jr_fail(r, "unterminated string");
            char e = (char)s[r->pos + 1];
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *hit = e ? strchr(from, e) : NULL;
            if (hit) {
                if (out)
                    out[k] = to[hit - from];
                k++;
                r->pos += 2;
                continue;
            }
            if (e != 'u')
                return eddy__jr_fail(r, "bad escape");
            r->pos += 2;
            uint32_t cp;
            if (!hex4(r, &cp))
                return false;
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return eddy__jr_fail(r, "lone surrogate escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;
                if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
                    return eddy__jr_fail(r, "lone surrogate escape");
                r->pos += 2;
                if (!hex4(r, &lo))
                    return false;
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return eddy__jr_fail(r, "lone surrogate escape");
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            }
            char tmp[4];
            size_t n = put_utf8(out ? out + k : tmp, cp);
            k += n;
            continue;
        }
        uint32_t cp;
        size_t n = eddy__utf8_decode(s + r->pos, r->len - r->pos, &cp);
        if (n == 0)
            return eddy__jr_fail(r, "not UTF-8");
        if (out)
            memcpy(out + k, s + r->pos, n);
        k += n;
        r->pos += n;
    }
    if (outlen)
        *outlen = k;
    return true;
}

bool eddy__jr_string(eddy__jr *r, char **out, size_t *len) {
    *out = NULL;
    if (r->failed)
        return false;
    ws(r);
    size_t start = r->pos, n;
    if (!scan_string(r, NULL, &n))
        return false;
    char *b = malloc(n + 1);
    if (!b) {
        r->nomem = true;
        return eddy__jr_fail(r, "out of memory");
    }
    r->pos = start;
    scan_string(r, b, &n);
    b[n] = '\0';
    *out = b;
    if (len)
        *len = n;
    return true;
}

static bool digits(eddy__jr *r) {
    size_t start = r->pos;
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
        r->pos++;
    return r->pos > start;
}

static bool number(eddy__jr *r) {
    if (r->pos < r->len && r->s[r->pos] == '-')
        r->pos++;
    if (r->pos < r->len && r->s[r->pos] == '0') {
        r->pos++;
        if (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9')
            return eddy__jr_fail(r, "leading zero in a number");
    } else if (!digits(r)) {
        return eddy__jr_fail(r, "bad number");
    }
    if (r->pos < r->len && r->s[r->pos] == '.') {
        r->pos++;
        if (!digits(r))
            return eddy__jr_fail(r, "bad number");
    }
    if (r->pos < r->len && (r->s[r->pos] == 'e' || r->s[r->pos] == 'E')) {
        r->pos++;
        if (r->pos < r->len && (r->s[r->pos] == '+' || r->s[r->pos] == '-'))
            r->pos++;
        if (!digits(r))
            return eddy__jr_fail(r, "bad number");
    }
    return true;
}

static bool literal(eddy__jr *r, const char *word) {
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0)
        return eddy__jr_fail(r, "unexpected character");
    r->pos += n;
    return true;
}

static bool value(eddy__jr *r, unsigned depth) {
    char c = eddy__jr_peek(r);
    switch (c) {
    case '"':
        return scan_string(r, NULL, NULL);
    case 't':
        return literal(r, "true");
    case 'f':
        return literal(r, "false");
    case 'n':
        return literal(r, "null");
    case '{':
    case '[': {
        if (depth >= EDDY__JR_MAX_DEPTH)
            return eddy__jr_fail(r, "nested too deep");
        char close = c == '{' ? '}' : ']';
        r->pos++;
        if (eddy__jr_take(r, close))
            return true;
        do {
            if (c == '{') {
                if (eddy__jr_peek(r) != '"')
                    return eddy__jr_fail(r, "expected a member name");
                if (!scan_string(r, NULL, NULL) || !eddy__jr_expect(r, ':'))
                    return false;
            }
            if (!value(r, depth + 1))
                return false;
        } while (eddy__jr_take(r, ','));
        return eddy__jr_expect(r, close);
    }
    case 0:
        return r->failed ? false : eddy__jr_fail(r, "unexpected end of input");
    default:
        if (c == '-' || (c >= '0' && c <= '9'))
            return number(r);
        return eddy__jr_fail(r, "unexpected character");
    }
}

bool eddy__jr_value(eddy__jr *r, size_t *start, size_t *end) {
    if (eddy__jr_peek(r) == 0 && r->failed)
        return false;
    size_t s = r->pos;
    if (!value(r, 0))
        return false;
    if (start)
        *start = s;
    if (end)
        *end = r->pos;
    return true;
}

bool eddy__jr_end(eddy__jr *r) {
    if (r->failed)
        return false;
    ws(r);
    return r->pos == r->len ? true : eddy__jr_fail(r, "text after the end of the document");
}

bool eddy__json_valid(const char *s, size_t len) {
    eddy__jr r;
    eddy__jr_init(&r, s, len);
    return eddy__jr_value(&r, NULL, NULL) && eddy__jr_end(&r);
}

size_t eddy__json_minify(const char *s, size_t len, char *out) {
    size_t k = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (in_string) {
            out[k++] = c;
            if (c == '\\' && i + 1 < len)
                out[k++] = s[++i];
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
            out[k++] = c;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out[k++] = c;
        }
    }
    return k;
}

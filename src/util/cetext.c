/* SPDX-License-Identifier: BSD-3-Clause */
/* CloudEvents text rules; see cetext.h. */
#include "util/cetext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t eddy__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xE0) == 0xC0 ? 2
                 : (s[0] & 0xF0) == 0xE0 ? 3
                 : (s[0] & 0xF8) == 0xF0 ? 4
                                         : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    uint32_t c = len == 1 ? s[0] : len == 2 ? s[0] & 0x1Fu : len == 3 ? s[0] & 0x0Fu : s[0] & 0x07u;
    for (size_t i = 1; i < len; i++)
        c = (c << 6) | (s[i] & 0x3Fu);
    static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
    if (c < min[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        return 0;
    *cp = c;
    return len;
}

bool eddy__ce_string_ok(const char *s, size_t len, size_t *pos, char *why, size_t whysize) {
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < len;) {
        /* printable ASCII, nearly every attribute's every byte, needs no decoding; this runs
         * for each attribute of each entry read */
        for (; i + 8 <= len; i += 8) { /* eight at a time: no byte below 0x20 or above 0x7e */
            uint64_t w;
            memcpy(&w, p + i, 8);
            const uint64_t ones = 0x0101010101010101u, high = 0x8080808080808080u;
            if ((((w - 0x20 * ones) & ~w) | ((w + ones) | w)) & high)
                break;
        }
        while (i < len && p[i] >= 0x20 && p[i] < 0x7f)
            i++;
        if (i == len)
            break;
        uint32_t cp = 0;
        size_t n = eddy__utf8_decode(p + i, len - i, &cp);
        const char *what = NULL;
        if (n == 0) {
            /* A CESU-style encoded surrogate (ED A0..BF xx) is named as such. */
            bool surrogate = p[i] == 0xED && i + 2 < len && (p[i + 1] & 0xE0) == 0xA0 &&
                             (p[i + 2] & 0xC0) == 0x80;
            what = surrogate ? "a surrogate code point" : "not UTF-8";
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
            what = "control character";
        } else if ((cp >= 0xFDD0 && cp <= 0xFDEF) || (cp & 0xFFFE) == 0xFFFE) {
            what = "noncharacter";
        }
        if (what) {
            if (pos)
                *pos = i;
            if (why && whysize) {
                if (n)
                    snprintf(why, whysize, "%s U+%04X", what, (unsigned)cp);
                else
                    snprintf(why, whysize, "%s (byte 0x%02X)", what, p[i]);
            }
            return false;
        }
        i += n;
    }
    return true;
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *eddy__base64_encode(const void *bytes, size_t len) {
    const unsigned char *b = bytes;
    if (len > (SIZE_MAX - 1) / 4 * 3 - 3)
        return NULL;
    char *out = malloc((len + 2) / 3 * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)b[i] << 16 | (i + 1 < len ? (unsigned)b[i + 1] << 8 : 0) |
                     (i + 2 < len ? b[i + 2] : 0);
        *o++ = b64[v >> 18 & 63];
        *o++ = b64[v >> 12 & 63];
        *o++ = i + 1 < len ? b64[v >> 6 & 63] : '=';
        *o++ = i + 2 < len ? b64[v & 63] : '=';
    }
    *o = '\0';
    return out;
}

static int b64_val(unsigned char c) {
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Decodes into out (room for n / 4 * 3 bytes) when out is not NULL; false on bad input:
 * a length not a multiple of 4, a character outside the alphabet, padding anywhere but at the
 * end, or nonzero bits under the padding (not canonical). */
static bool b64_run(const char *s, size_t n, unsigned char *out, size_t *len) {
    const unsigned char *p = (const unsigned char *)s;
    if (n % 4)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            if (p[i + j] == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad || (v[j] = b64_val(p[i + j])) < 0) {
                return false;
            }
        }
        unsigned w =
            (unsigned)v[0] << 18 | (unsigned)v[1] << 12 | (unsigned)v[2] << 6 | (unsigned)v[3];
        if ((pad == 1 && (w & 0xFF)) || (pad == 2 && (w & 0xFFFF)))
            return false;
        if (out) {
            out[k] = (unsigned char)(w >> 16);
            if (pad < 2)
                out[k + 1] = (unsigned char)(w >> 8);
            if (pad < 1)
                out[k + 2] = (unsigned char)w;
        }
        k += (size_t)(3 - pad);
    }
    *len = k;
    return true;
}

bool eddy__base64_ok(const char *s, size_t n) {
    size_t len;
    return b64_run(s, n, NULL, &len);
}

bool eddy__base64_decode(const char *s, size_t n, unsigned char **out, size_t *len, bool *nomem) {
    *out = NULL;
    if (nomem)
        *nomem = false;
    size_t k;
    if (!b64_run(s, n, NULL, &k))
        return false;
    unsigned char *b = malloc(k + 1);
    if (!b) {
        if (nomem)
            *nomem = true;
        return false;
    }
    b64_run(s, n, b, &k);
    b[k] = '\0';
    *out = b;
    *len = k;
    return true;
}

bool eddy__ce_int_parse(const char *s, int32_t *out) {
    const char *p = s;
    bool neg = *p == '-';
    if (neg)
        p++;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1]) || (neg && p[0] == '0'))
        return false;
    long long v = 0;
    for (; *p; p++) {
        if (*p < '0' || *p > '9' || p - s > 11)
            return false;
        v = v * 10 + (*p - '0');
    }
    if (neg)
        v = -v;
    if (v < INT32_MIN || v > INT32_MAX)
        return false;
    if (out)
        *out = (int32_t)v;
    return true;
}

bool eddy__ext_value_ok(eddy_ext_type type, const char *s) {
    switch (type) {
    case EDDY_EXT_STRING:
        return true;
    case EDDY_EXT_BOOLEAN:
        return strcmp(s, "true") == 0 || strcmp(s, "false") == 0;
    case EDDY_EXT_INTEGER:
        return eddy__ce_int_parse(s, NULL);
    case EDDY_EXT_BINARY:
        return eddy__base64_ok(s, strlen(s));
    case EDDY_EXT_URI:
        return eddy__absolute_uri_ok(s);
    case EDDY_EXT_URI_REF:
        return eddy__uri_reference_ok(s);
    case EDDY_EXT_TIMESTAMP:
        return eddy__rfc3339_ok(s);
    }
    return false;
}

const char *eddy__ext_type_suffix(eddy_ext_type type) {
    static const char *const suffix[] = {
        "", ":boolean", ":integer", ":binary", ":uri", ":uriref", ":timestamp",
    };
    return (unsigned)type < sizeof(suffix) / sizeof(suffix[0]) ? suffix[type] : "";
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend URL parsing: memory://[name], redis://[user:password@]host[:port][/db] (rediss://
 * the same over TLS), unix:///path[?db=N] and
 * redis-sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db] (and
 * rediss-sentinel://) and redis-cluster://[user:password@]host[:port][,host[:port]...][/0] (and
 * rediss-cluster://), into an eddy__url the caller owns.
 *
 * Invariants: on failure *out is all zero and nothing is allocated; no detail ever contains
 * the password. The second holds because details quote only pieces that cannot hold it (the
 * scheme, the host after the last '@', the path, the valid start of a memory name) and never
 * echo a port or db text, which is where a password lands when the '@' is forgotten
 * ("redis://u:secret"). */
#include "util/url.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "error.h"

#define DEFAULT_PORT 6379
#define DEFAULT_SENTINEL_PORT 26379
#define DB_MAX INT_MAX /* the server's `databases` setting decides: a bad index is its error */
#define QUOTE_MAX 64
#define SCHEMES                                                                                    \
    "expected memory://, redis://, rediss://, unix://, redis-sentinel://, rediss-sentinel://, "    \
    "redis-cluster:// or rediss-cluster://"

/* Largest socket path connect() takes, leaving room for the terminating NUL. */
#define UNIX_PATH_MAX (sizeof(((struct sockaddr_un *)0)->sun_path) - 1)

#define invalid(err, ...) eddy__fail((err), EDDY_ERR_INVALID_URL, __VA_ARGS__)

/* Copies [s, s+len) for a detail, at most QUOTE_MAX bytes, escaping non-printable bytes so a
 * stray control character shows up instead of garbling the message. */
static const char *quote(char *buf, size_t size, const char *s, size_t len) {
    size_t n = 0, i = 0;
    for (; i < len && i < QUOTE_MAX && n + 5 < size; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            buf[n++] = (char)c;
        else
            n += (size_t)snprintf(buf + n, size - n, "\\x%02x", c);
    }
    if (i < len && n + 4 <= size) {
        memcpy(buf + n, "...", 3);
        n += 3;
    }
    buf[n] = '\0';
    return buf;
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_alnum(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static bool is_hex(char c) { return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

/* Parses [s, s+len) as a decimal in [lo, hi]. Digits only: no sign, no spaces, no hex, which
 * strtol would let through. */
static bool parse_uint(const char *s, size_t len, long lo, long hi, long *out) {
    if (len == 0)
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
        if (v > hi)
            return false; /* also stops overflow on long digit strings */
    }
    if (v < lo)
        return false;
    *out = v;
    return true;
}

/* Explains why parse_uint refused a port or db without echoing the text (see the top). */
static eddy_status bad_number(eddy_error *err, const char *what, const char *s, size_t len, long lo,
                              long hi) {
    if (len == 0)
        return invalid(err, "empty %s (expected %ld..%ld)", what, lo, hi);
    size_t digits = 0;
    while (digits < len && is_digit(s[digits]))
        digits++;
    if (digits == 0)
        return invalid(err, "%s is not a decimal number (expected %ld..%ld)", what, lo, hi);
    if (digits < len)
        return invalid(err, "junk after the %s at %zu", what, digits);
    return invalid(err, "%s out of range (expected %ld..%ld)", what, lo, hi);
}

static char *dup_range(const char *s, size_t len) {
    char *p = malloc(len + 1);
    if (p) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

/* Copies [s, s+len) decoding only %40, %3A and %25 (either case), the escapes a user or
 * password needs to carry '@', ':' and '%' themselves; other '%' sequences stay literal. */
static char *dup_unescape(const char *s, size_t len) {
    char *p = malloc(len + 1);
    if (!p)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len && is_hex(s[i + 1]) && is_hex(s[i + 2])) {
            char hi = s[i + 1], lo = (char)(s[i + 2] | 0x20);
            char c = hi == '4' && lo == '0'   ? '@'
                     : hi == '3' && lo == 'a' ? ':'
                     : hi == '2' && lo == '5' ? '%'
                                              : '\0';
            if (c) {
                p[n++] = c;
                i += 2;
                continue;
            }
        }
        p[n++] = s[i];
    }
    p[n] = '\0';
    return p;
}

static bool has_scheme(const char *text, const char *scheme, const char **rest) {
    size_t n = strlen(scheme);
    if (strncasecmp(text, scheme, n) != 0 || strncmp(text + n, "://", 3) != 0)
        return false;
    *rest = text + n + 3;
    return true;
}

static bool is_known(const char *scheme, size_t len) {
    static const char *const known[] = {"memory",         "redis",         "rediss",
                                        "redis-sentinel", "unix",          "rediss-sentinel",
                                        "redis-cluster",  "rediss-cluster"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (strlen(known[i]) == len && strncasecmp(scheme, known[i], len) == 0)
            return true;
    return false;
}

static eddy_status parse_memory(const char *name, eddy__url *out, eddy_error *err) {
    char q[QUOTE_MAX * 4 + 8];
    size_t len = strlen(name);
    for (size_t i = 0; i < len; i++) {
        char c = name[i];
        if (!is_alnum(c) && c != '_' && c != '.' && c != '-')
            /* Only the valid prefix is quoted: someone pasting "memory://u:secret@x" must not
             * see the secret echoed. */
            return invalid(err,
                           "memory name: bad character at %zu after '%s' (allowed: A-Z a-z "
                           "0-9 _ . -)",
                           i, quote(q, sizeof(q), name, i));
    }
    out->kind = EDDY__URL_MEMORY;
    out->name = dup_range(name, len);
    return out->name ? EDDY_OK : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
}

static eddy_status parse_host(const char *s, size_t len, char **host, eddy_error *err) {
    char q[QUOTE_MAX * 4 + 8];
    if (len == 0)
        return invalid(err, "empty host");
    if (s[0] == '[') {
        /* The caller found the matching ']' already; the brackets only keep the address's
         * colons apart from the port's, so they are not part of the host hiredis gets. */
        const char *a = s + 1;
        size_t alen = len - 2;
        bool colon = false;
        for (size_t i = 0; i < alen; i++) {
            if (a[i] == ':')
                colon = true;
            else if (!is_hex(a[i]) && a[i] != '.')
                return invalid(err, "IPv6 host '%s': bad character at %zu",
                               quote(q, sizeof(q), s, len), i + 1);
        }
        if (!colon)
            return invalid(err, "IPv6 host '%s' is not an IPv6 address",
                           quote(q, sizeof(q), s, len));
        *host = dup_range(a, alen);
    } else {
        for (size_t i = 0; i < len; i++)
            if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '.' && s[i] != '_')
                return invalid(err, "host '%s': bad character at %zu", quote(q, sizeof(q), s, len),
                               i);
        *host = dup_range(s, len);
    }
    return *host ? EDDY_OK : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
}

/* Parses host[:port] or [v6]:port filling all of [s, s+len); positions in details count from
 * s. *port keeps its default when no port is written. */
static eddy_status parse_hostport(const char *s, size_t len, char **host, int *port,
                                  eddy_error *err) {
    const char *end, *lim = s + len; /* end of the host */
    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return invalid(err, "IPv6 host without a closing ']'");
        if (close == s + 1)
            return invalid(err, "empty host");
        end = close + 1;
        if (end < lim && *end != ':')
            return invalid(err, "junk after the IPv6 host at %zu", (size_t)(end - s));
    } else {
        const char *colon = memchr(s, ':', len);
        end = colon ? colon : lim;
    }
    eddy_status st = parse_host(s, (size_t)(end - s), host, err);
    if (st != EDDY_OK || end == lim)
        return st;
    const char *p = end + 1;
    long v;
    if (!parse_uint(p, (size_t)(lim - p), 1, 65535, &v))
        return bad_number(err, "port", p, (size_t)(lim - p), 1, 65535);
    *port = (int)v;
    return EDDY_OK;
}

static eddy_status parse_userinfo(const char *s, size_t len, eddy__url *out, eddy_error *err) {
    const char *colon = memchr(s, ':', len);
    /* AUTH always takes a password, so a bare "user@" cannot be what was meant. */
    if (!colon)
        return invalid(err, "credentials need a ':' (user:password@ or :password@)");
    size_t ulen = (size_t)(colon - s), plen = len - ulen - 1;
    if (plen == 0)
        return invalid(err, "empty password in credentials");
    if (ulen > 0 && !(out->user = dup_unescape(s, ulen)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
    if (!(out->password = dup_unescape(colon + 1, plen)))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
    return EDDY_OK;
}

static eddy_status parse_db(const char *s, eddy__url *out, eddy_error *err) {
    size_t len = strlen(s);
    long db;
    if (!parse_uint(s, len, 0, DB_MAX, &db))
        return bad_number(err, "db", s, len, 0, DB_MAX);
    out->db = (int)db;
    return EDDY_OK;
}

static eddy_status parse_redis(const char *s, eddy__url *out, eddy_error *err) {
    out->kind = EDDY__URL_TCP;
    out->port = DEFAULT_PORT;

    /* Credentials end at the last '@', not the first '/' as RFC 3986 would have it: passwords
     * from secret stores carry '/', '@' and ':', and host, port and db never contain '@'. */
    const char *at = strrchr(s, '@');
    if (at) {
        eddy_status st = parse_userinfo(s, (size_t)(at - s), out, err);
        if (st != EDDY_OK)
            return st;
        s = at + 1;
    }

    size_t len = strcspn(s, "/");
    eddy_status st = parse_hostport(s, len, &out->host, &out->port, err);
    if (st != EDDY_OK)
        return st;
    s += len;
    return *s == '/' ? parse_db(s + 1, out, err) : EDDY_OK;
}

/* The master's name: what `sentinel monitor` was given, so letters, digits and - _ . : only. */
static eddy_status parse_master_name(const char *s, size_t len, eddy__url *out, eddy_error *err) {
    char q[QUOTE_MAX * 4 + 8];
    if (len == 0)
        return invalid(err,
                       "missing master name (expected redis-sentinel://host:port/master-name)");
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && !strchr("-_.:", s[i]))
            return invalid(err, "master name: bad character at %zu after '%s'", i,
                           quote(q, sizeof(q), s, i));
    out->name = dup_range(s, len);
    return out->name ? EDDY_OK : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
}

/* [user:password@] before a host list: the last '@', as for redis://. */
static eddy_status parse_list_userinfo(const char **s, eddy__url *out, eddy_error *err) {
    const char *at = strrchr(*s, '@');
    if (!at)
        return EDDY_OK;
    eddy_status st = parse_userinfo(*s, (size_t)(at - *s), out, err);
    *s = at + 1;
    return st;
}

/* host[:port][,host[:port]...] up to the first '/' or the end, into out->sentinels; `what`
 * names one of them in a detail ("sentinel", "node"). *s is left at the '/' or the end. */
static eddy_status parse_hostlist(const char **s, int default_port, const char *what,
                                  eddy__url *out, eddy_error *err) {
    size_t list = strcspn(*s, "/"), n = 1;
    for (size_t i = 0; i < list; i++)
        n += (*s)[i] == ',';
    if (!(out->sentinels = malloc(n * sizeof(*out->sentinels))))
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
    const char *p = *s;
    for (size_t i = 0; i < n; i++) {
        size_t len = strcspn(p, ",/");
        eddy__hostport *hp = &out->sentinels[out->nsentinels++];
        *hp = (eddy__hostport){.port = default_port};
        eddy_status st = parse_hostport(p, len, &hp->host, &hp->port, err);
        if (st != EDDY_OK && n > 1 && err) { /* which one: its positions count from its start */
            char why[sizeof(err->detail)];
            memcpy(why, err->detail, sizeof(why));
            int k = snprintf(err->detail, sizeof(err->detail), "%s %zu of %zu: ", what, i + 1, n);
            if (k > 0 && (size_t)k < sizeof(err->detail))
                snprintf(err->detail + k, sizeof(err->detail) - (size_t)k, "%.*s",
                         (int)(sizeof(err->detail) - (size_t)k - 1), why);
        }
        if (st != EDDY_OK)
            return st;
        p += len + 1;
    }
    *s += list;
    return EDDY_OK;
}

/* [user:password@]host[:port][,host[:port]...]/master-name[/db]: the credentials and db are
 * the master's (as redis-cli and redis-py take them); settings.sentinel_password is the
 * sentinels'. */
static eddy_status parse_sentinel(const char *s, eddy__url *out, eddy_error *err) {
    out->kind = EDDY__URL_SENTINEL;
    eddy_status st = parse_list_userinfo(&s, out, err);
    if (st == EDDY_OK)
        st = parse_hostlist(&s, DEFAULT_SENTINEL_PORT, "sentinel", out, err);
    if (st != EDDY_OK)
        return st;
    if (*s != '/')
        return invalid(err,
                       "missing master name (expected redis-sentinel://host:port/master-name)");
    s++;
    size_t len = strcspn(s, "/");
    if ((st = parse_master_name(s, len, out, err)) != EDDY_OK)
        return st;
    s += len;
    return *s == '/' ? parse_db(s + 1, out, err) : EDDY_OK;
}

/* [user:password@]host[:port][,host[:port]...][/0]: the credentials are every node's. A
 * cluster has db 0 only (SELECT of another is refused there), so no other index is taken. */
static eddy_status parse_cluster(const char *s, eddy__url *out, eddy_error *err) {
    out->kind = EDDY__URL_CLUSTER;
    eddy_status st = parse_list_userinfo(&s, out, err);
    if (st == EDDY_OK)
        st = parse_hostlist(&s, DEFAULT_PORT, "node", out, err);
    if (st != EDDY_OK || *s != '/')
        return st;
    if ((st = parse_db(s + 1, out, err)) != EDDY_OK)
        return st;
    if (out->db != 0)
        return invalid(err, "db %d: a Redis Cluster has db 0 only (leave the db out)", out->db);
    return EDDY_OK;
}

static eddy_status parse_unix(const char *s, eddy__url *out, eddy_error *err) {
    char q[QUOTE_MAX * 4 + 8];
    out->kind = EDDY__URL_UNIX;
    if (*s == '\0')
        return invalid(err, "missing socket path (expected unix:///absolute/path)");
    if (*s != '/')
        return invalid(err, "socket path must be absolute: unix:///path, with three slashes");

    size_t len = strcspn(s, "?");
    if (len == 1)
        return invalid(err, "missing socket path (expected unix:///absolute/path)");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == 0x7f)
            return invalid(err, "socket path '%s': control character at %zu",
                           quote(q, sizeof(q), s, len), i);
    }
    if (len > UNIX_PATH_MAX)
        return invalid(err, "socket path '%s': %zu bytes, more than the %zu a socket takes",
                       quote(q, sizeof(q), s, len), len, (size_t)UNIX_PATH_MAX);

    const char *query = s + len;
    if (*query == '?') {
        query++;
        if (strncmp(query, "db=", 3) != 0)
            return invalid(err, "unknown query after the socket path (only ?db=N)");
        const char *v = query + 3;
        size_t vlen = strlen(v);
        long db;
        if (!parse_uint(v, vlen, 0, DB_MAX, &db))
            return bad_number(err, "db", v, vlen, 0, DB_MAX);
        out->db = (int)db;
    }
    out->path = dup_range(s, len);
    return out->path ? EDDY_OK : eddy__fail(err, EDDY_ERR_NOMEM, "out of memory copying the URL");
}

eddy_status eddy__url_parse(const char *text, eddy__url *out, eddy_error *err) {
    if (!out)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "URL output is NULL");
    memset(out, 0, sizeof(*out));
    if (!text)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "URL is NULL");

    const char *rest;
    eddy_status st;
    if (has_scheme(text, "memory", &rest)) {
        st = parse_memory(rest, out, err);
    } else if (has_scheme(text, "redis", &rest)) {
        st = parse_redis(rest, out, err);
    } else if (has_scheme(text, "rediss", &rest)) {
        st = parse_redis(rest, out, err);
        out->tls = true;
    } else if (has_scheme(text, "unix", &rest)) {
        st = parse_unix(rest, out, err);
    } else if (has_scheme(text, "redis-sentinel", &rest)) {
        st = parse_sentinel(rest, out, err);
    } else if (has_scheme(text, "rediss-sentinel", &rest)) {
        st = parse_sentinel(rest, out, err);
        out->tls = true;
    } else if (has_scheme(text, "redis-cluster", &rest)) {
        st = parse_cluster(rest, out, err);
    } else if (has_scheme(text, "rediss-cluster", &rest)) {
        st = parse_cluster(rest, out, err);
        out->tls = true;
    } else {
        /* Text before the first ':' cannot hold the password (it follows a ':'), so it is safe
         * to quote when it looks like a scheme; otherwise it is not named at all. */
        size_t slen = strcspn(text, ":");
        bool shaped = text[slen] == ':' && slen > 0 &&
                      strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789+.-") >= slen;
        char q[QUOTE_MAX * 4 + 8];
        if (*text == '\0')
            st = invalid(err, "URL is empty (" SCHEMES ")");
        else if (!shaped)
            st = invalid(err, "no scheme (" SCHEMES ")");
        else if (is_known(text, slen))
            st = invalid(err, "scheme '%s' must be followed by '://'",
                         quote(q, sizeof(q), text, slen));
        else
            st = invalid(err, "unknown scheme '%s' (" SCHEMES ")", quote(q, sizeof(q), text, slen));
    }
    if (st != EDDY_OK)
        eddy__url_free(out);
    return st;
}

void eddy__url_free(eddy__url *url) {
    if (!url)
        return;
    if (url->password) {
        /* Wipe through a volatile pointer so the store is not dropped as dead: freed memory
         * is reused and may end up in logs or core dumps. */
        volatile char *p = url->password;
        while (*p)
            *p++ = '\0';
    }
    free(url->name);
    free(url->host);
    free(url->path);
    free(url->user);
    free(url->password);
    for (size_t i = 0; i < url->nsentinels; i++)
        free(url->sentinels[i].host);
    free(url->sentinels);
    memset(url, 0, sizeof(*url));
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy exporter: the namespace's figures for Prometheus, served over HTTP by libmicrohttpd
 * (Debian's libmicrohttpd-dev; without it the command is not built in). Each GET /metrics reads
 * them afresh through one admin handle (eddy_admin_stats_prometheus), opened at the start and
 * kept; the exporter's own figures come first:
 *   eddy_up{namespace}                 1 when this scrape read the namespace, 0 when it could not
 *   eddy_exporter_scrapes_total        the scrapes served
 *   eddy_exporter_scrape_errors_total  those that could not read it
 * A scrape while the backend is down or refuses is answered 200 with eddy_up 0 and nothing
 * else, so an alert tells "Redis is down" (eddy_up == 0) from "the exporter is down" (up == 0);
 * the handle reconnects at the next scrape, and the change is said once on stderr either way.
 * One thread (libmicrohttpd's) serves every connection, so scrapes run one at a time and the
 * handle is used by that thread alone. Other paths are 404, other methods than GET and HEAD 405.
 * SIGINT and SIGTERM stop it: the daemon is stopped (open connections closed), then the handle
 * closed, exit 0. */
#include <string.h>

#include "cli.h"

#ifdef EDDY_CLI_EXPORTER

#include <inttypes.h>
#include <microhttpd.h>
#include <netdb.h>
#include <sys/socket.h>

typedef struct exporter {
    eddy_settings settings;
    const char *ns, *pattern;
    eddy_admin *admin; /* NULL until opened (again) */
    bool down;         /* the last scrape could not read the namespace (said on stderr) */
    uint64_t scrapes, errors;
} exporter;

/* Appends text to a growing buffer; false once out of memory (the buffer is freed then). */
typedef struct text {
    char *buf;
    size_t len, cap;
} text;

static bool put(text *t, const char *s) {
    size_t n = strlen(s);
    if (!t->buf && t->cap)
        return false;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1024;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            free(t->buf);
            t->buf = NULL;
            t->cap = 1; /* failed: every later put fails */
            return false;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n + 1);
    t->len += n;
    return true;
}

/* A label value as the format wants it: backslash, double quote and newline escaped. */
static void put_label_value(text *t, const char *s) {
    char one[2] = {0};
    for (; *s; s++) {
        if (*s == '\\')
            put(t, "\\\\");
        else if (*s == '"')
            put(t, "\\\"");
        else if (*s == '\n')
            put(t, "\\n");
        else {
            one[0] = *s;
            put(t, one);
        }
    }
}

static void put_u64(text *t, const char *name, const char *help, const char *type, uint64_t v) {
    char line[64];
    put(t, "# HELP ");
    put(t, name);
    put(t, " ");
    put(t, help);
    put(t, "\n# TYPE ");
    put(t, name);
    put(t, " ");
    put(t, type);
    put(t, "\n");
    put(t, name);
    snprintf(line, sizeof(line), " %" PRIu64 "\n", v);
    put(t, line);
}

/* One scrape's body (malloc'd), or NULL when out of memory. */
static char *scrape(exporter *x, size_t *len) {
    eddy_error err = {0};
    char *doc = NULL;
    x->scrapes++;
    if (!x->admin && eddy_admin_open(&x->settings, &x->admin, &err) != EDDY_OK)
        x->admin = NULL;
    if (x->admin)
        doc = eddy_admin_stats_prometheus(x->admin, x->pattern, &err);
    if (!doc) {
        x->errors++;
        if (!x->down)
            fprintf(stderr, "eddy exporter: cannot read namespace %s: %s: %s (eddy_up 0)\n", x->ns,
                    eddy_status_str(err.status), err.detail);
        x->down = true;
    } else if (x->down) {
        fprintf(stderr, "eddy exporter: namespace %s read again (eddy_up 1)\n", x->ns);
        x->down = false;
    }
    text t = {0};
    put(&t, "# HELP eddy_up 1 when this scrape read the namespace, 0 when it could not.\n"
            "# TYPE eddy_up gauge\neddy_up{namespace=\"");
    put_label_value(&t, x->ns);
    put(&t, doc ? "\"} 1\n" : "\"} 0\n");
    put_u64(&t, "eddy_exporter_scrapes_total", "Scrapes this exporter served.", "counter",
            x->scrapes);
    put_u64(&t, "eddy_exporter_scrape_errors_total",
            "Scrapes that could not read the namespace (the backend down or refusing).", "counter",
            x->errors);
    if (doc)
        put(&t, doc);
    free(doc);
    *len = t.len;
    return t.buf;
}

static enum MHD_Result respond(struct MHD_Connection *conn, unsigned status, const char *type,
                               char *body, size_t len, bool must_free) {
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, body, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!r) {
        if (must_free)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls) {
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)con_cls;
    static char not_allowed[] = "method not allowed: this exporter serves GET /metrics\n";
    static char not_found[] = "not found: this exporter serves GET /metrics\n";
    static char no_memory[] = "out of memory\n";
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", not_allowed,
                       strlen(not_allowed), false);
    if (strcmp(url, "/metrics") != 0)
        return respond(conn, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", not_found,
                       strlen(not_found), false);
    size_t len;
    char *body = scrape(cls, &len);
    if (!body)
        return respond(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", no_memory,
                       strlen(no_memory), false);
    return respond(conn, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body, len, true);
}

/* HOST:PORT, [IPv6]:PORT: the address to listen on (freeaddrinfo it), or NULL after saying why. */
static struct addrinfo *listen_address(cli *c, const char *spec, int *rc) {
    char host[256];
    const char *colon = strrchr(spec, ':');
    *rc = -1;
    if (!colon || colon == spec || !colon[1] ||
        strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(colon + 1) > 5 ||
        atoi(colon + 1) > 65535) {
        *rc = cli_usage(c, "--listen %s: not HOST:PORT (127.0.0.1:9464, [::1]:9464)", spec);
        return NULL;
    }
    size_t hl = (size_t)(colon - spec);
    if (spec[0] == '[' && hl >= 2 && spec[hl - 1] == ']') {
        spec++;
        hl -= 2;
    }
    if (hl >= sizeof(host)) {
        *rc = cli_usage(c, "--listen: the host is too long");
        return NULL;
    }
    memcpy(host, spec, hl);
    host[hl] = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV | AI_PASSIVE},
                    *ai = NULL;
    int e = getaddrinfo(host, colon + 1, &hints, &ai);
    if (e != 0) {
        *rc = cli_usage(c, "--listen %s: %s", host, gai_strerror(e));
        return NULL;
    }
    return ai;
}

/* A bad pattern is refused at the start, whether the backend answers or not: read on an
 * in-process backend (memory://), where the library checks it as on any other. */
static eddy_status pattern_check(const char *pattern, eddy_error *err) {
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = "memory://eddy-exporter-pattern-check";
    eddy_admin *a;
    eddy_status st = eddy_admin_open(&s, &a, err);
    if (st != EDDY_OK)
        return st;
    char *doc = eddy_admin_stats_prometheus(a, pattern, err);
    st = doc ? EDDY_OK : err->status;
    free(doc);
    eddy_admin_close(a);
    return st;
}

static const char help[] =
    "usage: eddy exporter --listen HOST:PORT [PATTERN]\n"
    "\n"
    "Serves the namespace's figures to Prometheus over HTTP: GET /metrics answers what eddy\n"
    "stats --prometheus prints (subjects, groups: pending, lag, oldest pending age, dead\n"
    "letters; the registry; PATTERN: only the subjects it matches), read afresh at each scrape\n"
    "through one connection, after eddy_up (1 when the namespace was read, 0 when the backend is\n"
    "down or refuses: the scrape is still answered) and the exporter's scrape counters. Other\n"
    "paths answer 404, other methods than GET and HEAD 405. Prints the address it listens on,\n"
    "then serves until Ctrl-C or SIGTERM (exit 0). See docs/metrics.md.\n"
    "  --listen HOST:PORT  the address to listen on: 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464\n"
    "                      (every interface); port 0 picks a free one (printed)\n";

int cmd_exporter(cli *c, int argc, char **argv) {
    const char *listen = NULL;
    const cli_opt opts[] = {{"listen", 's', &listen}, {NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (!listen)
        return cli_usage(c, "--listen HOST:PORT is required (see --help)");
    exporter x = {.ns = c->ns, .pattern = npos ? pos[0] : NULL};
    if ((rc = cli_settings(c, &x.settings)) >= 0)
        return rc;
    struct addrinfo *ai = listen_address(c, listen, &rc);
    if (!ai)
        return rc;
    cli_block_signals(); /* before any thread exists (the handles', the daemon's): they inherit it */
    eddy_error err = {0};
    eddy_status st;
    if (x.pattern && (st = pattern_check(x.pattern, &err)) != EDDY_OK) {
        freeaddrinfo(ai);
        return cli_fail(c, "bad pattern", st, &err);
    }
    st = eddy_admin_open(&x.settings, &x.admin, &err);
    /* A bad URL or setting is refused; a backend that does not answer yet is served as down. */
    if (st != EDDY_OK && cli_exit_code(st) == CLI_USAGE) {
        freeaddrinfo(ai);
        return cli_fail_connect(c, "cannot connect", st, &err);
    }
    if (st != EDDY_OK) {
        x.admin = NULL;
        x.down = true;
        fprintf(stderr, "eddy exporter: cannot read namespace %s yet: %s: %s (eddy_up 0)\n", x.ns,
                eddy_status_str(st), err.detail);
    }
    cli_connected(false);
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    struct MHD_Daemon *d = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, &x, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
        MHD_OPTION_CONNECTION_LIMIT, 64u, MHD_OPTION_CONNECTION_TIMEOUT, 30u, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!d) {
        eddy_admin_close(x.admin);
        fprintf(stderr, "eddy exporter: cannot listen on %s\n", listen);
        return CLI_FAILED;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    char shown[300];
    snprintf(shown, sizeof(shown), "%.*s:%u", (int)(strrchr(listen, ':') - listen), listen,
             info ? info->port : 0);
    if (c->json)
        cli_print_line(
            json_pack("{s:s,s:s,s:s}", "listen", shown, "url", cli_url_shown(c), "ns", c->ns));
    else {
        printf("eddy exporter: serving http://%s/metrics (namespace %s on %s)\n", shown, c->ns,
               cli_url_shown(c));
        fflush(stdout);
    }
    cli_wait(0);
    MHD_stop_daemon(d);
    eddy_admin_close(x.admin);
    return CLI_OK;
}

#else

int cmd_exporter(cli *c, int argc, char **argv) {
    (void)argc;
    (void)argv;
    fprintf(stderr,
            "eddy %s: not built in: libmicrohttpd was not found when eddy was built (Debian: "
            "libmicrohttpd-dev)\n",
            c->command);
    return CLI_FAILED;
}

#endif

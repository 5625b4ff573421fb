/* SPDX-License-Identifier: BSD-3-Clause */
/* What the commands share: option parsing, messages and exit codes, settings, waiting for a
 * signal or for the work to be done, progress bars. Messages go to stderr, results to stdout. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

#include <stddef.h>
#include <termios.h>

/* The global options: before or after the command. dst holds the field's offset in cli. */
#define G(name, kind, field)                                                                       \
    { name, kind, (void *)offsetof(cli, field) }
static const cli_opt global_opts[] = {G("url", 's', url),
                                      G("ns", 's', ns),
                                      G("json", 'f', json),
                                      G("raw", 'f', raw),
                                      G("help", 'f', help),
                                      G("version", 'f', version),
                                      G("askpass", 'f', askpass),
                                      G("tls-cacert", 's', tls_cacert),
                                      G("tls-cacertdir", 's', tls_cacertdir),
                                      G("tls-cert", 's', tls_cert),
                                      G("tls-key", 's', tls_key),
                                      G("tls-sni", 's', tls_sni),
                                      G("tls-insecure", 'f', tls_insecure),
                                      {NULL, 0, NULL}};
#undef G

static void *global_dst(cli *c, const cli_opt *o) {
    if (strncmp(o->name, "tls-", 4) == 0)
        c->tls_given = true;
    return (char *)c + (size_t)o->dst;
}

static const cli_opt *find(const cli_opt *opts, const char *name, size_t len) {
    for (; opts && opts->name; opts++)
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    return NULL;
}

bool cli_global_takes_value(const char *arg) {
    if (strcmp(arg, "-X") == 0)
        return true;
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '='))
        return false;
    const cli_opt *o = find(global_opts, arg + 2, strlen(arg + 2));
    return o && o->kind != 'f';
}

int cli_parse(cli *c, int argc, char **argv, const cli_opt *opts, char **pos, int maxpos,
              int *npos) {
    *npos = 0;
    bool only_positional = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (only_positional || a[0] != '-' || a[1] == '\0') {
            if (*npos == maxpos)
                return cli_usage(c, "unexpected argument '%s' (see --help)", a);
            pos[(*npos)++] = argv[i];
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (strcmp(a, "-h") == 0) {
            c->help = true;
            continue;
        }
        if (strncmp(a, "-X", 2) == 0) { /* -X NAME=VALUE or -XNAME=VALUE */
            const char *v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !strchr(v, '=') || v[0] == '=')
                return cli_usage(c, "-X needs NAME=VALUE (a setting: docs/configuration.md)");
            if (c->nset == (int)(sizeof(c->set) / sizeof(c->set[0])))
                return cli_usage(c, "-X: at most %d of them",
                                 (int)(sizeof(c->set) / sizeof(c->set[0])));
            c->set[c->nset++] = v;
            continue;
        }
        if (a[1] != '-')
            return cli_usage(c, "unknown option '%s' (see --help)", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find(opts, name, len);
        void *dst = o ? o->dst : NULL;
        if (!o && (o = find(global_opts, name, len)))
            dst = global_dst(c, o);
        if (!o)
            return cli_usage(c, "unknown option '--%.*s' (see --help)", (int)len, name);
        if (o->kind == 'f') {
            if (eq)
                return cli_usage(c, "option '--%s' takes no value", o->name);
            *(bool *)dst = true;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!value)
            return cli_usage(c, "option '--%s' needs a value", o->name);
        if (o->kind == 's') {
            *(const char **)dst = value;
        } else if (o->kind == 'l') {
            cli_list *l = dst;
            if (l->n == CLI_LIST_MAX)
                return cli_usage(c, "option '--%s': at most %d of them", o->name, CLI_LIST_MAX);
            l->items[l->n++] = value;
        } else {
            char *end;
            errno = 0;
            long long v = strtoll(value, &end, 10);
            if (errno || end == value || *end || v < 0)
                return cli_usage(c, "option '--%s': '%s' is not a non-negative number", o->name,
                                 value);
            *(long long *)dst = v;
        }
    }
    if (c->version && !c->help) { /* --version anywhere: the version, and nothing else */
        printf("eddy %s\n", eddy_version());
        return CLI_OK;
    }
    return -1;
}

int cli_usage(cli *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "eddy%s%s: ", c->command ? " " : "", c->command ? c->command : "");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return CLI_USAGE;
}

int cli_exit_code(eddy_status st) {
    switch (st) {
    case EDDY_OK:
        return CLI_OK;
    case EDDY_ERR_IO:
    case EDDY_ERR_AUTH:
    case EDDY_ERR_TLS:
    case EDDY_ERR_TIMEOUT:
    case EDDY_ERR_PROTOCOL:
        return CLI_UNREACHABLE;
    case EDDY_ERR_INVALID_ARGUMENT:
    case EDDY_ERR_INVALID_EVENT:
    case EDDY_ERR_INVALID_SUBJECT:
    case EDDY_ERR_INVALID_PATTERN:
    case EDDY_ERR_INVALID_URL:
    case EDDY_ERR_INVALID_SPEC:
    case EDDY_ERR_TOO_LARGE:
    case EDDY_ERR_RESERVED_ATTRIBUTE:
        return CLI_USAGE;
    case EDDY_ERR_NOT_FOUND:
        return CLI_NOT_FOUND;
    case EDDY_ERR_NO_RESPONDERS:
    case EDDY_ERR_NO_REPLY:
        return CLI_NO_REPLY;
    default:
        return CLI_FAILED;
    }
}

/* The hint after a failure to reach the backend: what to look at, by what failed. */
static void hint(const cli *c, eddy_status st, const char *detail, char *out, size_t size) {
    const char *url = cli_url_shown(c);
    const char *d = detail ? detail : "";
    if (st == EDDY_ERR_AUTH && strstr(d, "NOAUTH"))
        snprintf(out, size,
                 "the server at %s wants a password: give it in $EDDY_PASSWORD, at --askpass, or "
                 "in the URL",
                 url);
    else if (st == EDDY_ERR_AUTH)
        snprintf(out, size,
                 "the server at %s refused the credentials: check the user and password "
                 "($EDDY_PASSWORD, --askpass, or the URL)",
                 url);
    else if (st == EDDY_ERR_TLS && strstr(d, "did not answer the TLS handshake"))
        snprintf(out, size, "is %s a TLS port? (rediss:// speaks TLS, redis:// does not)", url);
    else if (st == EDDY_ERR_TLS && strstr(d, "server certificate refused"))
        snprintf(out, size,
                 "the server's certificate was refused: name its CA with --tls-cacert "
                 "or --tls-cacertdir, and the name it carries with --tls-sni");
    else if (st == EDDY_ERR_TLS && strstr(d, "asked for a client certificate"))
        snprintf(out, size, "the server wants a client certificate: --tls-cert and --tls-key");
    else if (st == EDDY_ERR_TLS)
        snprintf(out, size, "TLS to %s failed: check the --tls-* options", url);
    else if (st == EDDY_ERR_PROTOCOL)
        snprintf(out, size,
                 "the server at %s is not a Redis server, or not one eddy can read (the "
                 "right port?)",
                 url);
    else if (st == EDDY_ERR_BACKEND && strstr(d, "DB index"))
        snprintf(out, size, "the server at %s has no such database (the URL's /DB)", url);
    else if (st == EDDY_ERR_BACKEND)
        snprintf(out, size, "the server at %s refused to open the connection", url);
    else if ((strstr(d, "reset") || strstr(d, "closed")) && strncmp(c->url, "rediss", 6) != 0)
        snprintf(out, size,
                 "the server at %s closed the connection: is it up, and does it want TLS "
                 "(rediss://)?",
                 url);
    else
        snprintf(out, size, "is the backend at %s up? (set it with --url or EDDY_URL)", url);
}

/* One line: what failed, the library's reason, and (when the backend was not reached) what to
 * look at. */
static int fail_as(cli *c, const char *what, eddy_status st, const eddy_error *err, int code) {
    const char *detail = err && err->status == st && err->detail[0] ? err->detail : NULL;
    char why[1024] = "";
    if (code == CLI_UNREACHABLE) {
        why[0] = ';';
        why[1] = ' ';
        hint(c, st, detail, why + 2, sizeof(why) - 2);
    }
    fprintf(stderr, "eddy%s%s: %s: %s%s%s%s\n", c->command ? " " : "", c->command ? c->command : "",
            what, eddy_status_str(st), detail ? ": " : "", detail ? detail : "", why);
    return code;
}

int cli_fail(cli *c, const char *what, eddy_status st, const eddy_error *err) {
    return fail_as(c, what, st, err, cli_exit_code(st));
}

int cli_fail_connect(cli *c, const char *what, eddy_status st, const eddy_error *err) {
    int code = cli_exit_code(st);
    /* Whatever the server said while the connection was being made (a refused db number, a
     * refused HELLO), the backend could not be reached; bad input stays a usage error. */
    if (code != CLI_USAGE && code != CLI_OK)
        code = CLI_UNREACHABLE;
    return fail_as(c, what, st, err, code);
}

int cli_help(const char *text) {
    fputs(text, stdout);
    return CLI_OK;
}

/* 0: connecting, every line of the library dropped (the failure is cli_fail's one line);
 * 1: connected, a one-shot command: all but the connection's reconnect lines (the command's
 * own failure says it); 2: connected, a long-running command: everything. */
static atomic_int log_mode;

void cli_connected(bool everything) { atomic_store(&log_mode, everything ? 2 : 1); }

static void log_warnings(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    int mode = atomic_load(&log_mode);
    if (level < EDDY_LOG_WARN || mode == 0)
        return;
    if (mode == 1 && (strstr(msg, "; reconnecting") || strstr(msg, "retrying every")))
        return;
    fprintf(stderr, "eddy: %s: %s\n", level == EDDY_LOG_WARN ? "warning" : "error", msg);
}

static int prepare(cli *c);

int cli_settings(cli *c, eddy_settings *s) {
    eddy_settings_init(s);
    int rc = prepare(c);
    if (rc >= 0)
        return rc;
    s->url = c->url_with_pass ? c->url_with_pass : c->url;
    s->ns = c->ns;
    s->source = "eddy-cli";
    s->log = log_warnings;
    s->connect_timeout_ms = 2000;
    s->reconnect_max_ms = 500;
    s->tls_cacert = c->tls_cacert;
    s->tls_cacertdir = c->tls_cacertdir;
    s->tls_cert = c->tls_cert;
    s->tls_key = c->tls_key;
    s->tls_sni = c->tls_sni;
    s->tls_insecure = c->tls_insecure;
    /* -X last: it may set anything above (a password in -X url=... is the user's to show). */
    for (int i = 0; i < c->nset; i++) {
        const char *eq = strchr(c->set[i], '=');
        char name[64];
        snprintf(name, sizeof(name), "%.*s", (int)(eq - c->set[i]), c->set[i]);
        eddy_error err = {0};
        if (eddy_settings_set(s, name, eq + 1, &err) != EDDY_OK)
            return cli_usage(c, "-X %s: %s", name, err.detail);
    }
    return -1;
}

/* ---- URLs and passwords ------------------------------------------------------------------- */

/* Where the credentials of a URL are: [*from, *to) is "user:password" (the last '@' ends
 * them, as the library reads it), false when it has none. */
static bool userinfo(const char *url, const char **from, const char **to) {
    const char *scheme_end = strstr(url, "://");
    if (!scheme_end)
        return false;
    const char *at = strrchr(scheme_end + 3, '@');
    if (!at)
        return false;
    *from = scheme_end + 3;
    *to = at;
    return true;
}

void cli_mask_url(const char *url, char *out, size_t size) {
    const char *from, *to, *colon;
    if (!userinfo(url, &from, &to) || !(colon = memchr(from, ':', (size_t)(to - from)))) {
        snprintf(out, size, "%s", url);
        return;
    }
    snprintf(out, size, "%.*s:***%s", (int)(colon - url), url, to);
}

const char *cli_url_shown(const cli *c) {
    static char shown[400];
    cli_mask_url(c->url, shown, sizeof(shown));
    return shown;
}

/* Reads a line from the terminal with echo off. NULL when there is no terminal. */
static char *read_password(void) {
    FILE *tty = fopen("/dev/tty", "r+");
    if (!tty)
        return NULL;
    struct termios old, quiet;
    bool have = tcgetattr(fileno(tty), &old) == 0;
    if (have) {
        quiet = old;
        quiet.c_lflag &= ~(tcflag_t)ECHO;
        quiet.c_lflag |= ECHONL;
        tcsetattr(fileno(tty), TCSAFLUSH, &quiet);
    }
    fputs("Password: ", tty);
    fflush(tty);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n = getline(&line, &cap, tty);
    if (have)
        tcsetattr(fileno(tty), TCSAFLUSH, &old);
    fclose(tty);
    if (n < 0) {
        free(line);
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

/* The URL with the password in its credentials (escaped as the library reads it: %25 %3A %40). */
static char *splice_password(const char *url, const char *password) {
    const char *scheme_end = strstr(url, "://"), *from, *to;
    size_t plen = strlen(password);
    char *esc = malloc(plen * 3 + 1), *e = esc;
    if (!esc)
        return NULL;
    for (const char *p = password; *p; p++)
        e += *p == '%' || *p == ':' || *p == '@' ? sprintf(e, "%%%02X", (unsigned char)*p)
                                                 : (*e = *p, 1);
    *e = '\0';
    const char *head_end = scheme_end + 3, *rest = head_end, *user = "";
    int ulen = 0;
    if (userinfo(url, &from, &to)) { /* keep the user; the given password replaces the URL's */
        const char *colon = memchr(from, ':', (size_t)(to - from));
        user = from;
        ulen = (int)((colon ? colon : to) - from);
        rest = to + 1;
    }
    size_t size = strlen(url) + strlen(esc) + 4;
    char *out = malloc(size);
    if (out)
        snprintf(out, size, "%.*s%.*s:%s@%s", (int)(head_end - url), url, ulen, user, esc, rest);
    free(esc);
    return out;
}

static const char *env_or(const char *given, const char *name) {
    const char *v = getenv(name);
    return given ? given : v && *v ? v : NULL;
}

/* Finishes the global options once parsed (once: the password is asked for once):
 * $EDDY_TLS_*, $EDDY_PASSWORD, --askpass, the URL the library gets. */
static int prepare(cli *c) {
    static bool prepared;
    if (prepared)
        return -1;
    prepared = true;
    bool tls_url = strncmp(c->url, "rediss", 6) == 0;
    if (c->tls_given && !tls_url)
        return cli_usage(c, "the --tls-* options need a TLS URL (rediss://, rediss-sentinel://, "
                            "rediss-cluster://)");
    if (tls_url) { /* the environment's TLS settings apply to TLS URLs only */
        c->tls_cacert = env_or(c->tls_cacert, "EDDY_TLS_CACERT");
        c->tls_cacertdir = env_or(c->tls_cacertdir, "EDDY_TLS_CACERTDIR");
        c->tls_cert = env_or(c->tls_cert, "EDDY_TLS_CERT");
        c->tls_key = env_or(c->tls_key, "EDDY_TLS_KEY");
        c->tls_sni = env_or(c->tls_sni, "EDDY_TLS_SNI");
        const char *insecure = getenv("EDDY_TLS_INSECURE");
        if (insecure && *insecure && strcmp(insecure, "0") != 0 && strcmp(insecure, "no") != 0)
            c->tls_insecure = true;
    }
    if (!c->tls_cert != !c->tls_key)
        return cli_usage(c, "--tls-cert and --tls-key go together (a client certificate and its "
                            "key)");
    const char *envpw = getenv("EDDY_PASSWORD");
    if (c->askpass) {
        if (!(c->password = read_password()))
            return cli_usage(c, "--askpass: cannot read a password from the terminal");
    } else if (envpw && *envpw && !(c->password = strdup(envpw))) {
        return cli_usage(c, "out of memory");
    }
    if (!c->password)
        return -1;
    if (strncmp(c->url, "redis", 5) != 0 || !strstr(c->url, "://")) {
        free(c->password);
        c->password = NULL;
        return cli_usage(c, "a password ($EDDY_PASSWORD, --askpass) needs a redis://, rediss://, "
                            "redis-sentinel:// or redis-cluster:// URL");
    }
    if (!*c->password) {
        free(c->password);
        c->password = NULL;
        return cli_usage(c, "the password is empty");
    }
    c->url_with_pass = splice_password(c->url, c->password);
    explicit_bzero(c->password, strlen(c->password)); /* only the URL the library gets keeps it */
    free(c->password);
    c->password = NULL;
    if (!c->url_with_pass)
        return cli_usage(c, "out of memory");
    return -1;
}

void cli_random_id(char out[37]) {
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    size_t got = f ? fread(b, 1, sizeof(b), f) : 0;
    if (f)
        fclose(f);
    for (size_t i = got; i < sizeof(b); i++) /* no /dev/urandom: time and pid will do */
        b[i] = (unsigned char)((unsigned long)time(NULL) * 2654435761u >> (i % 24)) ^
               (unsigned char)(getpid() >> (i % 16));
    b[6] = (unsigned char)((b[6] & 0x0F) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3F) | 0x80);
    snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

/* ---- waiting ------------------------------------------------------------------------------ */

static pthread_mutex_t wait_lock = PTHREAD_MUTEX_INITIALIZER;
static bool wait_done;

void cli_block_signals(void) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

void cli_wait_done(void) {
    pthread_mutex_lock(&wait_lock);
    wait_done = true;
    pthread_mutex_unlock(&wait_lock);
}

static bool is_done(void) {
    pthread_mutex_lock(&wait_lock);
    bool d = wait_done;
    pthread_mutex_unlock(&wait_lock);
    return d;
}

int cli_wait(long long timeout_ms) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    long long waited = 0;
    const long long step = 50; /* how often `done` is looked at */
    while (!is_done()) {
        if (timeout_ms > 0 && waited >= timeout_ms)
            return -1;
        struct timespec ts = {0, step * 1000000L};
        if (sigtimedwait(&set, NULL, &ts) > 0)
            return 0;
        waited += step;
    }
    return 1;
}

/* ---- progress ----------------------------------------------------------------------------- */

void cli_progress_start(cli_progress *p, const char *label, unsigned long long total) {
    p->on = isatty(STDERR_FILENO) && total > 0;
    p->label = label;
    p->total = total;
    p->last_width = -1;
    cli_progress_update(p, 0);
}

void cli_progress_update(cli_progress *p, unsigned long long done) {
    if (!p->on)
        return;
    const int width = 30;
    int filled = (int)(done >= p->total ? width : done * width / p->total);
    if (filled == p->last_width && done < p->total)
        return; /* redraw only when the bar moves */
    p->last_width = filled;
    fprintf(stderr, "\r%s [%.*s%*s] %llu/%llu", p->label, filled, "##############################",
            width - filled, "", done, p->total);
    fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
    if (p->on)
        fputc('\n', stderr);
    p->on = false;
}

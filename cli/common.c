/* SPDX-License-Identifier: BSD-3-Clause */
/* What the commands share: option parsing, messages and exit codes, settings, waiting for a
 * signal or for the work to be done, progress bars. Messages go to stderr, results to stdout. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

static const cli_opt global_opts[] = {{"url", 's', NULL},
                                      {"ns", 's', NULL},
                                      {"json", 'f', NULL},
                                      {"help", 'f', NULL},
                                      {NULL, 0, NULL}};

static void *global_dst(cli *c, const char *name) {
    if (strcmp(name, "url") == 0)
        return &c->url;
    if (strcmp(name, "ns") == 0)
        return &c->ns;
    return strcmp(name, "json") == 0 ? (void *)&c->json : (void *)&c->help;
}

static const cli_opt *find(const cli_opt *opts, const char *name, size_t len) {
    for (; opts && opts->name; opts++)
        if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
            return opts;
    return NULL;
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
        if (a[1] != '-')
            return cli_usage(c, "unknown option '%s' (see --help)", a);
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const cli_opt *o = find(opts, name, len);
        void *dst = o ? o->dst : NULL;
        if (!o && (o = find(global_opts, name, len)))
            dst = global_dst(c, o->name);
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

int cli_fail(cli *c, const char *what, eddy_status st, const eddy_error *err) {
    const char *detail = err && err->status == st && err->detail[0] ? err->detail : NULL;
    fprintf(stderr, "eddy%s%s: %s: %s%s%s\n", c->command ? " " : "", c->command ? c->command : "",
            what, eddy_status_str(st), detail ? ": " : "", detail ? detail : "");
    if (cli_exit_code(st) == CLI_UNREACHABLE)
        fprintf(stderr, "eddy: is the backend at %s up? (set it with --url or EDDY_URL)\n", c->url);
    return cli_exit_code(st);
}

int cli_help(const char *text) {
    fputs(text, stdout);
    return CLI_OK;
}

static void log_warnings(eddy_log_level level, const char *msg, void *user) {
    if (level >= EDDY_LOG_WARN)
        fprintf(stderr, "eddy: %s: %s\n", level == EDDY_LOG_WARN ? "warning" : "error", msg);
}

void cli_settings(const cli *c, eddy_settings *s) {
    eddy_settings_init(s);
    s->url = c->url;
    s->ns = c->ns;
    s->source = "eddy-cli";
    s->log = log_warnings;
    s->connect_timeout_ms = 2000;
    s->reconnect_max_ms = 500;
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

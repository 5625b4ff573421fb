/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy top: the namespace's stats document (eddy_admin_stats_json) read again every interval,
 * shown as a table that is drawn over itself on a terminal, or as plain lines elsewhere. The
 * rates are the change of the document's counters (a subject's entries_added, a group's
 * entries_read) over the change of its time_ms (the server's clock), so every figure but the
 * rates is the library's, as in eddy groups.
 *
 * On a terminal: the alternate screen, the cursor hidden, stdin in non-canonical mode without
 * echo (keys sort; q quits); all of it is undone on q, --count, SIGINT, SIGTERM and on exit, and
 * around a stop (Ctrl-Z). The signals are blocked but while waiting (ppoll), so a refresh is
 * never cut in the middle of a round trip. SIGWINCH redraws at the new size. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "eddy/admin.h"

static const char help[] =
    "usage: eddy top [PATTERN] [--interval SECONDS] [--count N] [--sort KEY]\n"
    "\n"
    "A live view of the namespace (PATTERN: the subjects it matches), read again every\n"
    "--interval: per subject and group, the rate in (entries added to the subject per second),\n"
    "the rate out (entries delivered to the group per second), lag, pending entries, the age\n"
    "of the oldest pending entry, consumers and dead letters; then the registry's responders.\n"
    "Rates are shown from the second refresh on (- until then).\n"
    "On a terminal, keys sort the table: s subject, g group, i (or r) rate in, o rate out,\n"
    "l lag, p pending, a oldest pending, c consumers, d dead letters (numbers largest first);\n"
    "q (or Ctrl-C) quits; the sorted column's heading is marked with a *. Elsewhere (not a "
    "terminal) it prints plain lines: per refresh one line per\n"
    "subject and group, and per responder, each starting with the server's time; with --json\n"
    "the same as JSON lines.\n"
    "  --interval SECONDS  between refreshes (default 1; 0.5 for half a second)\n"
    "  --count N           stop after N refreshes (default: until q or Ctrl-C)\n"
    "  --sort KEY          sort by KEY first: subject, group, in, out, lag, pending, oldest,\n"
    "                      consumers or dlq (default subject)\n";

/* ---- the figures ---------------------------------------------------------------------------- */

enum { K_SUBJECT, K_GROUP, K_IN, K_OUT, K_LAG, K_PENDING, K_OLDEST, K_CONSUMERS, K_DLQ, K_N };

static const struct sort_key {
    char key;
    const char *name, *label;
} keys[K_N] = {
    {'s', "subject", "SUBJECT"}, {'g', "group", "GROUP"},
    {'i', "in", "IN/s"},         {'o', "out", "OUT/s"},
    {'l', "lag", "LAG"},         {'p', "pending", "PENDING"},
    {'a', "oldest", "OLDEST"},   {'c', "consumers", "CONSUMERS"},
    {'d', "dlq", "DLQ"},
};

/* One subject and group (group NULL: a subject without groups). Strings are borrowed from the
 * document; -1 is unknown (a rate's first refresh, a lag the server cannot tell). */
typedef struct row {
    const char *subject, *group;
    double in, out;
    long long lag, pending, oldest, consumers, dlq;
} row;

static int sort_by;

static long long integer(json_t *v) { return json_is_integer(v) ? json_integer_value(v) : -1; }

static int cmp_text(const char *a, const char *b) {
    if (!a || !b)
        return a ? 1 : b ? -1 : 0; /* no group first */
    return strcmp(a, b);
}

static int cmp_num(double a, double b) { return a > b ? -1 : a < b ? 1 : 0; } /* largest first */

static int cmp_row(const void *pa, const void *pb) {
    const row *a = pa, *b = pb;
    int c = 0;
    switch (sort_by) {
    case K_GROUP:
        c = cmp_text(a->group, b->group);
        break;
    case K_IN:
        c = cmp_num(a->in, b->in);
        break;
    case K_OUT:
        c = cmp_num(a->out, b->out);
        break;
    case K_LAG:
        c = cmp_num((double)a->lag, (double)b->lag);
        break;
    case K_PENDING:
        c = cmp_num((double)a->pending, (double)b->pending);
        break;
    case K_OLDEST:
        c = cmp_num((double)a->oldest, (double)b->oldest);
        break;
    case K_CONSUMERS:
        c = cmp_num((double)a->consumers, (double)b->consumers);
        break;
    case K_DLQ:
        c = cmp_num((double)a->dlq, (double)b->dlq);
        break;
    }
    if (c == 0)
        c = strcmp(a->subject, b->subject);
    return c ? c : cmp_text(a->group, b->group);
}

/* A rate from a counter now and before (-1: unknown) over dt_ms; -1 when it cannot be told
 * (no earlier refresh, a counter that went back: the stream was made again). */
static double rate(long long now, json_t *before, long long dt_ms) {
    long long then = integer(before);
    if (now < 0 || then < 0 || now < then || dt_ms <= 0)
        return -1;
    return (double)(now - then) * 1000.0 / (double)dt_ms;
}

/* The previous refresh's counters: "<subject>" and "<subject>\t<group>" to a number. */
typedef struct view {
    json_t *doc;  /* the last document read */
    json_t *prev; /* counters of the refresh before it */
    long long prev_time_ms;
    row *rows;
    size_t nrows;
    char error[320]; /* the last refresh that failed, shown on the terminal */
} view;

/* Takes a new document: the rows with their rates against the counters kept, which it then
 * replaces with the document's. */
static bool take(view *v, json_t *doc) {
    json_t *subjects = json_object_get(doc, "subjects"), *counters = json_object();
    long long t = integer(json_object_get(doc, "time_ms")), dt = t - v->prev_time_ms;
    size_t n = 0, i, k;
    json_t *si, *g;
    json_array_foreach(subjects, i, si) {
        size_t ng = json_array_size(json_object_get(si, "groups"));
        n += ng ? ng : 1;
    }
    row *rows = calloc(n ? n : 1, sizeof(*rows));
    if (!rows || !counters) {
        free(rows);
        json_decref(counters);
        return false;
    }
    n = 0;
    char key[1024];
    json_array_foreach(subjects, i, si) {
        const char *subject = json_string_value(json_object_get(si, "subject"));
        if (!subject)
            continue;
        long long added = integer(json_object_get(si, "entries_added"));
        double in = v->prev ? rate(added, json_object_get(v->prev, subject), dt) : -1;
        if (added >= 0)
            json_object_set_new(counters, subject, json_integer(added));
        json_t *groups = json_object_get(si, "groups");
        if (json_array_size(groups) == 0)
            rows[n++] = (row){subject, NULL, in, -1, -1, -1, -1, -1, -1};
        json_array_foreach(groups, k, g) {
            const char *group = json_string_value(json_object_get(g, "group"));
            if (!group)
                continue;
            snprintf(key, sizeof(key), "%s\t%s", subject, group);
            long long read = integer(json_object_get(g, "entries_read")),
                      lag = integer(json_object_get(g, "lag"));
            if (read < 0 && added >= 0 && lag >= 0 && lag <= added)
                read = added - lag; /* nothing read yet: Redis says nil, lag says how many */
            row *r = &rows[n++];
            *r = (row){
                .subject = subject,
                .group = group,
                .in = in,
                .out = v->prev ? rate(read, json_object_get(v->prev, key), dt) : -1,
                .lag = lag,
                .pending = integer(json_object_get(g, "pending")),
                .oldest = integer(json_object_get(g, "oldest_pending_ms")),
                .consumers = integer(json_object_get(g, "consumers")),
                .dlq = integer(json_object_get(g, "dead_letters")),
            };
            if (read >= 0)
                json_object_set_new(counters, key, json_integer(read));
        }
    }
    free(v->rows);
    json_decref(v->prev);
    json_decref(v->doc);
    v->rows = rows;
    v->nrows = n;
    v->doc = doc;
    v->prev = counters;
    v->prev_time_ms = t;
    v->error[0] = '\0';
    return true;
}

static void sort_rows(view *v) {
    if (v->nrows > 1)
        qsort(v->rows, v->nrows, sizeof(*v->rows), cmp_row);
}

/* ---- formatting ----------------------------------------------------------------------------- */

static const char *num(long long v, char *buf, size_t size) {
    if (v < 0)
        return "-";
    snprintf(buf, size, "%lld", v);
    return buf;
}

static const char *rate_text(double r, char *buf, size_t size) {
    if (r < 0)
        return "-";
    snprintf(buf, size, r < 1000 ? "%.1f" : "%.0f", r);
    return buf;
}

/* An age in milliseconds for people, as eddy groups shows it ("850ms", "12s", "3m20s"). */
static const char *age(long long v, char *buf, size_t size) {
    long long s = v / 1000;
    if (v < 0)
        return "-";
    if (v < 1000)
        snprintf(buf, size, "%lldms", v);
    else if (s < 60)
        snprintf(buf, size, "%llds", s);
    else if (s < 3600)
        snprintf(buf, size, "%lldm%02llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(buf, size, "%lldh%02lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(buf, size, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
    return buf;
}

/* The server's time as RFC 3339 in UTC, with milliseconds. */
static const char *timestamp(long long ms, char *buf, size_t size) {
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, size - n, ".%03lldZ", ms % 1000);
    return buf;
}

/* ---- plain lines ---------------------------------------------------------------------------- */

static bool print_plain(cli *c, const view *v) {
    char ts[48], b[8][32];
    timestamp(integer(json_object_get(v->doc, "time_ms")), ts, sizeof(ts));
    for (size_t i = 0; i < v->nrows; i++) {
        const row *r = &v->rows[i];
        if (c->json) {
            json_t *line =
                json_pack("{s:s,s:s,s:s?}", "time", ts, "subject", r->subject, "group", r->group);
            const char *names[] = {"in", "out"};
            double rates[] = {r->in, r->out};
            for (int k = 0; k < 2; k++)
                json_object_set_new(line, names[k],
                                    rates[k] < 0 ? json_null() : json_real(rates[k]));
            const char *inames[] = {"lag", "pending", "oldest_pending_ms", "consumers",
                                    "dead_letters"};
            long long ints[] = {r->lag, r->pending, r->oldest, r->consumers, r->dlq};
            for (int k = 0; k < 5; k++)
                json_object_set_new(line, inames[k],
                                    ints[k] < 0 ? json_null() : json_integer(ints[k]));
            if (!cli_print_line(line))
                return false;
            continue;
        }
        printf("%s subject=%s group=%s in=%s out=%s lag=%s pending=%s oldest=%s consumers=%s "
               "dlq=%s\n",
               ts, r->subject, r->group ? r->group : "-", rate_text(r->in, b[0], sizeof(b[0])),
               rate_text(r->out, b[1], sizeof(b[1])), num(r->lag, b[2], sizeof(b[2])),
               num(r->pending, b[3], sizeof(b[3])), age(r->oldest, b[4], sizeof(b[4])),
               num(r->consumers, b[5], sizeof(b[5])), num(r->dlq, b[6], sizeof(b[6])));
    }
    size_t i;
    json_t *reg;
    json_array_foreach(json_object_get(v->doc, "registry"), i, reg) {
        const char *kind = json_string_value(json_object_get(reg, "kind"));
        if (!kind || strcmp(kind, "responder") != 0)
            continue;
        const char *name = json_string_value(json_object_get(reg, "name")),
                   *pattern = json_string_value(json_object_get(reg, "pattern")),
                   *group = json_string_value(json_object_get(reg, "group")),
                   *instance = json_string_value(json_object_get(reg, "instance"));
        long long left = integer(json_object_get(reg, "lease_until_ms")) -
                         integer(json_object_get(v->doc, "time_ms"));
        if (c->json) {
            if (!cli_print_line(json_pack("{s:s,s:s,s:s?,s:s?,s:s?,s:s?,s:I}", "time", ts,
                                          "responder", name, "pattern", pattern, "group", group,
                                          "instance", instance, "kind", kind, "lease_left_ms",
                                          (json_int_t)left)))
                return false;
        } else {
            printf("%s responder=%s pattern=%s group=%s instance=%s lease=%s\n", ts,
                   name ? name : "?", pattern ? pattern : "?", group ? group : "?",
                   instance ? instance : "?", age(left, b[7], sizeof(b[7])));
        }
    }
    return fflush(stdout) == 0 && !ferror(stdout);
}

/* ---- the terminal --------------------------------------------------------------------------- */

static struct termios saved_tty;
static bool tty_raw, screen_on;
static volatile sig_atomic_t got_stop, got_winch, got_tstp;

static void on_signal(int sig) {
    if (sig == SIGWINCH)
        got_winch = 1;
    else if (sig == SIGTSTP)
        got_tstp = 1;
    else
        got_stop = 1;
}

/* Enters the alternate screen (and stdin's raw mode when it is a terminal). */
static void screen_enter(void) {
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
        struct termios raw = saved_tty;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT */
        raw.c_cc[VMIN] = 1;
        raw.c_cc[VTIME] = 0;
        tty_raw = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fputs("\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J", stdout);
    fflush(stdout);
    screen_on = true;
}

/* Leaves it: the screen as it was, the cursor back, stdin's mode as it was. */
static void screen_leave(void) {
    if (screen_on) {
        fputs("\x1b[0m\x1b[?25h\x1b[?1049l", stdout);
        fflush(stdout);
        screen_on = false;
    }
    if (tty_raw) {
        tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
        tty_raw = false;
    }
}

static void term_size(int *cols, int *lines) {
    struct winsize ws;
    *cols = 80;
    *lines = 24;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
        *cols = ws.ws_col;
        *lines = ws.ws_row;
    }
}

/* One line of the frame: cut to the width, the rest of the line cleared. */
static void frame_line(FILE *f, int cols, const char *attr, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void frame_line(FILE *f, int cols, const char *attr, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if ((int)strlen(line) > cols)
        line[cols] = '\0';
    fprintf(f, "%s%s%s\x1b[K\r\n", attr ? attr : "", line, attr ? "\x1b[0m" : "");
}

static int width_of(const view *v, bool group, int least, int most) {
    int w = least;
    for (size_t i = 0; i < v->nrows; i++) {
        const char *s = group ? v->rows[i].group : v->rows[i].subject;
        int n = s ? (int)strlen(s) : 1;
        w = n > w ? n : w;
    }
    return w < most ? w : most;
}

static void draw(cli *c, const view *v, double interval) {
    int cols, lines;
    term_size(&cols, &lines);
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return;
    char ts[48], b[8][32], label[K_N][16];
    fputs("\x1b[H", f);
    long long t = integer(json_object_get(v->doc, "time_ms"));
    frame_line(f, cols, "\x1b[1m", "eddy top  %s  ns %s  %s  every %gs  %zu rows", cli_url_shown(c),
               c->ns, t >= 0 ? timestamp(t, ts, sizeof(ts)) : "-", interval, v->nrows);
    frame_line(f, cols, NULL,
               "sort: %s   keys: s subject  g group  i in  o out  l lag  p pending  a oldest  "
               "c consumers  d dlq  q quit",
               keys[sort_by].name);
    int used = 2;
    if (v->error[0]) {
        frame_line(f, cols, "\x1b[31m", "refresh failed: %s", v->error);
        used++;
    }
    for (int k = 0; k < K_N; k++)
        snprintf(label[k], sizeof(label[k]), "%s%s", keys[k].label, k == sort_by ? "*" : "");
    int ws = width_of(v, false, 8, 48), wg = width_of(v, true, 6, 40);
    frame_line(f, cols, "\x1b[7m", "%-*s %-*s %9s %9s %9s %9s %8s %10s %7s", ws, label[K_SUBJECT],
               wg, label[K_GROUP], label[K_IN], label[K_OUT], label[K_LAG], label[K_PENDING],
               label[K_OLDEST], label[K_CONSUMERS], label[K_DLQ]);
    used++;
    size_t nresp = 0, i;
    json_t *reg, *registry = json_object_get(v->doc, "registry");
    json_array_foreach(registry, i, reg) {
        const char *kind = json_string_value(json_object_get(reg, "kind"));
        nresp += kind && strcmp(kind, "responder") == 0;
    }
    /* The responders take at most half of what is left, the rows the rest; the last line stays
     * empty (a newline there would scroll the screen). */
    int left = lines - used - 1;
    int resp_lines = nresp ? 2 + (int)nresp : 0;
    if (resp_lines > left / 2)
        resp_lines = nresp ? left / 2 : 0;
    int row_lines = left - resp_lines;
    for (size_t r = 0; r < v->nrows && row_lines > 0; r++, row_lines--) {
        const row *x = &v->rows[r];
        if (row_lines == 1 && r + 1 < v->nrows) {
            frame_line(f, cols, NULL, "... %zu more", v->nrows - r);
            break;
        }
        frame_line(f, cols, NULL, "%-*s %-*s %9s %9s %9s %9s %8s %10s %7s", ws, x->subject, wg,
                   x->group ? x->group : "-", rate_text(x->in, b[0], sizeof(b[0])),
                   rate_text(x->out, b[1], sizeof(b[1])), num(x->lag, b[2], sizeof(b[2])),
                   num(x->pending, b[3], sizeof(b[3])), age(x->oldest, b[4], sizeof(b[4])),
                   num(x->consumers, b[5], sizeof(b[5])), num(x->dlq, b[6], sizeof(b[6])));
    }
    if (v->nrows == 0 && row_lines > 0)
        frame_line(f, cols, NULL, "(no subject in namespace %s)", c->ns);
    if (resp_lines >= 3) {
        frame_line(f, cols, NULL, "%s", "");
        frame_line(f, cols, "\x1b[7m", "%-24s %-28s %-28s %-36s %8s", "RESPONDER", "PATTERN",
                   "GROUP", "INSTANCE", "LEASE");
        int room = resp_lines - 2;
        json_array_foreach(registry, i, reg) {
            const char *kind = json_string_value(json_object_get(reg, "kind"));
            if (!kind || strcmp(kind, "responder") != 0)
                continue;
            if (room-- <= 0)
                break;
            const char *name = json_string_value(json_object_get(reg, "name")),
                       *pattern = json_string_value(json_object_get(reg, "pattern")),
                       *group = json_string_value(json_object_get(reg, "group")),
                       *instance = json_string_value(json_object_get(reg, "instance"));
            frame_line(
                f, cols, NULL, "%-24s %-28s %-28s %-36s %8s", name ? name : "?",
                pattern ? pattern : "?", group ? group : "?", instance ? instance : "?",
                age(integer(json_object_get(reg, "lease_until_ms")) - t, b[7], sizeof(b[7])));
        }
    }
    fputs("\x1b[J", f); /* below the last line: cleared */
    fclose(f);
    fwrite(text, 1, size, stdout);
    fflush(stdout);
    free(text);
}

/* ---- the loop ------------------------------------------------------------------------------- */

static int refresh(cli *c, eddy_admin *a, const char *pattern, view *v, bool first) {
    eddy_error err = {0};
    char *text = eddy_admin_stats_json(a, pattern, &err);
    if (!text) {
        if (first)
            return cli_fail(c, "cannot read the namespace", err.status, &err);
        snprintf(v->error, sizeof(v->error), "%s: %s", eddy_status_name(err.status), err.detail);
        return -1;
    }
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    free(text);
    if (!doc || !take(v, doc)) {
        json_decref(doc);
        fprintf(stderr, "eddy top: the library wrote bad JSON: %s\n",
                doc ? "out of memory" : je.text);
        return CLI_FAILED;
    }
    sort_rows(v);
    return -1;
}

static double monotonic(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits until the deadline, taking keys on a terminal. 1: quit, 0: the deadline came. */
static int wait_keys(cli *c, view *v, bool tty, double deadline, double interval,
                     const sigset_t *waitmask) {
    for (;;) {
        if (got_stop)
            return 1;
        if (tty && got_tstp) { /* Ctrl-Z: the terminal as it was while stopped */
            got_tstp = 0;
            screen_leave();
            signal(SIGTSTP, SIG_DFL);
            raise(SIGTSTP); /* pending while blocked: taken below, at the unblock */
            sigset_t tstp;
            sigemptyset(&tstp);
            sigaddset(&tstp, SIGTSTP);
            sigprocmask(SIG_UNBLOCK, &tstp, NULL);
            sigprocmask(SIG_BLOCK, &tstp, NULL); /* continued */
            struct sigaction sa = {.sa_handler = on_signal};
            sigaction(SIGTSTP, &sa, NULL);
            screen_enter();
            got_winch = 1;
        }
        if (tty && got_winch) {
            got_winch = 0;
            draw(c, v, interval);
        }
        double now = monotonic();
        if (now >= deadline)
            return 0;
        double wait = deadline - now;
        struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
        struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
        int n = ppoll(&pfd, tty && tty_raw ? 1 : 0, &ts, waitmask);
        if (n < 0 && errno != EINTR)
            return 0;
        if (n <= 0 || !(pfd.revents & (POLLIN | POLLHUP)))
            continue;
        char buf[64];
        ssize_t got = read(STDIN_FILENO, buf, sizeof(buf));
        if (got <= 0) { /* the terminal is gone */
            tty_raw = false;
            continue;
        }
        for (ssize_t k = 0; k < got; k++) {
            if (buf[k] == 'q' || buf[k] == 'Q')
                return 1;
            char key = buf[k] == 'r' ? 'i' : buf[k]; /* r: the rate in, too */
            for (int s = 0; s < K_N; s++)
                if (key == keys[s].key && sort_by != s) {
                    sort_by = s;
                    sort_rows(v);
                    got_winch = 1; /* drawn again at the top of the loop */
                }
        }
    }
}

int cmd_top(cli *c, int argc, char **argv) {
    const char *interval_text = NULL, *sort_text = NULL;
    long long count = 0;
    cli_opt opts[] = {{"interval", 's', &interval_text},
                      {"count", 'n', &count},
                      {"sort", 's', &sort_text},
                      {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    double interval = 1;
    if (interval_text) {
        char *end;
        interval = strtod(interval_text, &end);
        if (end == interval_text || *end || !(interval >= 0.05 && interval <= 86400))
            return cli_usage(c, "--interval: '%s' is not a number of seconds (0.05 to 86400)",
                             interval_text);
    }
    sort_by = K_SUBJECT;
    if (sort_text) {
        sort_by = -1;
        for (int k = 0; k < K_N; k++)
            if (strcmp(sort_text, keys[k].name) == 0)
                sort_by = k;
        if (sort_by < 0)
            return cli_usage(c,
                             "--sort: '%s' is none of subject, group, in, out, lag, pending, "
                             "oldest, consumers, dlq",
                             sort_text);
    }
    const char *pattern = npos ? pos[0] : NULL;

    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    eddy_admin *a;
    eddy_error err = {0};
    eddy_status st = eddy_admin_open(&s, &a, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot connect", st, &err);
    cli_connected(false);

    /* The signals wait for ppoll; their handlers only set flags. */
    bool tty = isatty(STDOUT_FILENO) && !c->json;
    sigset_t block, waitmask;
    sigemptyset(&block);
    sigaddset(&block, SIGINT);
    sigaddset(&block, SIGTERM);
    if (tty) {
        sigaddset(&block, SIGWINCH);
        sigaddset(&block, SIGTSTP);
    }
    sigprocmask(SIG_BLOCK, &block, &waitmask);
    sigdelset(&waitmask, SIGINT);
    sigdelset(&waitmask, SIGTERM);
    sigdelset(&waitmask, SIGWINCH);
    sigdelset(&waitmask, SIGTSTP);
    struct sigaction sa = {.sa_handler = on_signal}, old[4];
    const int sigs[] = {SIGINT, SIGTERM, SIGWINCH, SIGTSTP};
    for (int k = 0; k < (tty ? 4 : 2); k++)
        sigaction(sigs[k], &sa, &old[k]);

    view v = {0};
    double started = monotonic();
    rc = refresh(c, a, pattern, &v, true); /* the first one before the screen: why it failed */
    if (rc < 0 && tty) {
        atexit(screen_leave);
        screen_enter();
    }
    for (long long n = 0; rc < 0 && !got_stop; n++) {
        if (n > 0) {
            started = monotonic();
            int r = refresh(c, a, pattern, &v, false);
            if (r >= 0) {
                rc = r;
                break;
            }
        }
        if (tty)
            draw(c, &v, interval);
        else if (!v.error[0] && !print_plain(c, &v))
            break; /* the reader went away */
        else if (v.error[0])
            fprintf(stderr, "eddy top: refresh failed: %s\n", v.error);
        if (count > 0 && n + 1 >= count)
            break;
        if (wait_keys(c, &v, tty, started + interval, interval, &waitmask))
            break;
    }
    if (tty)
        screen_leave();
    for (int k = 0; k < (tty ? 4 : 2); k++)
        sigaction(sigs[k], &old[k], NULL);
    sigprocmask(SIG_UNBLOCK, &block, NULL);
    eddy_admin_close(a);
    free(v.rows);
    json_decref(v.prev);
    json_decref(v.doc);
    return rc >= 0 ? rc : CLI_OK;
}

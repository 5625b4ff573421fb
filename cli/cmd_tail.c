/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy tail: a subscription that prints what it receives as JSON lines. Fan-out by default (it
 * sees every event published after it started, and takes nothing from anyone); with --group it
 * joins a competing group, AtLeastOnce: an event is acknowledged once printed. With --count N it
 * stops after N; deliveries beyond N are handed back (--group) so the group loses nothing.
 *
 * History (--from, --last): the subscription starts first, holding what it receives; then each
 * matching subject's stream is read (eddy_admin_history), merged by entry id and printed; then
 * the held deliveries go out, less those the history already showed (per subject, an entry id at
 * or below the newest one read), so nothing between the two is lost or shown twice. */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "cli.h"

static const char help[] =
    "usage: eddy tail PATTERN [--group GROUP] [--from start|ID|TIME] [--last N] [--count N]\n"
    "                 [--timeout MS]\n"
    "\n"
    "Prints each event published to a subject PATTERN matches (\"orders.created\", \"orders.*\",\n"
    "\"orders.>\") as one JSON line: {\"subject\", \"entry_id\", \"attempt\", \"event\": the\n"
    "CloudEvent in the CloudEvents JSON format (binary data as data_base64), \"data_value\":\n"
    "msgpack data decoded to JSON}; with --raw, only the data, one event per line.\n"
    "  --group GROUP   join the competing group GROUP (acknowledging what is printed) instead\n"
    "                  of a fan-out of its own, which sees only what is published after it starts\n"
    "  --from WHERE    first print the history, then go on live: start (every entry kept), an\n"
    "                  entry id (1700000000000-0, inclusive) or an RFC 3339 time\n"
    "                  (2026-01-31T12:00:00Z, entries from then on); history lines have\n"
    "                  \"attempt\": 0, in entry id order across the matching subjects (one\n"
    "                  subject's is printed as it is read; several are read whole, then merged)\n"
    "  --last N        first print the last N events of the history (at or after --from)\n"
    "  --count N       stop after N events (history included)\n"
    "  --timeout MS    stop after MS milliseconds (exit 5 when --count was not reached)\n"
    "Stops on Ctrl-C (exit 0).\n";

/* The newest history entry shown per subject: live deliveries at or below it are skipped. */
typedef struct shown_upto {
    char *subject;
    unsigned long long ms, seq;
} shown_upto;

typedef struct tail_state {
    pthread_mutex_t lock;
    pthread_cond_t history_done_cv;
    bool history_done; /* live deliveries wait until the history is printed */
    bool raw;
    long long count, printed; /* count 0: no limit */
    bool failed;              /* an event could not be written out */
    shown_upto *upto;
    size_t nupto;
} tail_state;

static bool parse_id(const char *id, unsigned long long *ms, unsigned long long *seq) {
    char *end;
    *ms = strtoull(id, &end, 10);
    *seq = 0;
    if (end == id)
        return false;
    if (*end == '-') {
        const char *s = end + 1;
        *seq = strtoull(s, &end, 10);
        if (end == s)
            return false;
    }
    return *end == '\0';
}

static int cmp_id(unsigned long long ams, unsigned long long aseq, unsigned long long bms,
                  unsigned long long bseq) {
    return ams != bms ? (ams < bms ? -1 : 1) : aseq != bseq ? (aseq < bseq ? -1 : 1) : 0;
}

/* Under lock: whether the history already showed this entry. */
static bool already_shown(const tail_state *t, const char *subject, const char *entry_id) {
    unsigned long long ms, seq;
    if (!parse_id(entry_id, &ms, &seq))
        return false;
    for (size_t i = 0; i < t->nupto; i++)
        if (strcmp(t->upto[i].subject, subject) == 0)
            return cmp_id(ms, seq, t->upto[i].ms, t->upto[i].seq) <= 0;
    return false;
}

/* Under lock: prints one event; false when stdout failed. */
static bool print_event(tail_state *t, const char *subject, const char *entry_id, int attempt,
                        const eddy_event *ev) {
    if (t->raw)
        return cli_print_raw(ev);
    return cli_print_line(json_pack("{s:s,s:s,s:i,s:o*,s:o*}", "subject", subject, "entry_id",
                                    entry_id, "attempt", attempt, "event", cli_event_json(ev),
                                    "data_value", cli_data_value(ev)));
}

static eddy_status on_event(eddy_delivery *d, void *user) {
    tail_state *t = user;
    pthread_mutex_lock(&t->lock);
    while (!t->history_done)
        pthread_cond_wait(&t->history_done_cv, &t->lock);
    if (t->failed || (t->count > 0 && t->printed >= t->count)) {
        pthread_mutex_unlock(&t->lock);
        return EDDY_ERR_UNAVAILABLE; /* not ours to take: handed back to the group */
    }
    if (already_shown(t, eddy_delivery_subject(d), eddy_delivery_entry_id(d))) {
        pthread_mutex_unlock(&t->lock);
        return EDDY_OK; /* the history printed it */
    }
    if (!print_event(t, eddy_delivery_subject(d), eddy_delivery_entry_id(d),
                     (int)eddy_delivery_attempt(d), eddy_delivery_event(d))) {
        t->failed = true; /* stdout is gone or full: keep the event, stop */
        cli_wait_done();
        pthread_mutex_unlock(&t->lock);
        return EDDY_ERR_UNAVAILABLE;
    }
    if (++t->printed == t->count)
        cli_wait_done();
    pthread_mutex_unlock(&t->lock);
    return EDDY_OK;
}

/* ---- history ------------------------------------------------------------------------------ */

/* One history entry, kept until every subject is read and they are sorted. */
typedef struct past {
    unsigned long long ms, seq;
    char *subject, *entry_id;
    eddy_event *ev;
} past;

typedef struct history {
    past *items;
    size_t n, cap;
    bool nomem;
} history;

static eddy_status keep_entry(const char *subject, const char *entry_id, const eddy_event *ev,
                              const char *why, void *user) {
    history *h = user;
    if (!ev) {
        fprintf(stderr, "eddy tail: %s entry %s is not an eddy event (%s); not shown\n", subject,
                entry_id, why ? why : "?");
        return EDDY_OK;
    }
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        past *bigger = realloc(h->items, cap * sizeof(*bigger));
        if (!bigger)
            return EDDY_ERR_NOMEM;
        h->items = bigger;
        h->cap = cap;
    }
    past *p = &h->items[h->n];
    if (!parse_id(entry_id, &p->ms, &p->seq))
        return EDDY_ERR_PROTOCOL;
    p->subject = strdup(subject);
    p->entry_id = strdup(entry_id);
    p->ev = eddy_event_dup(ev);
    if (!p->subject || !p->entry_id || !p->ev) {
        free(p->subject);
        free(p->entry_id);
        eddy_event_free(p->ev);
        return EDDY_ERR_NOMEM;
    }
    h->n++;
    return EDDY_OK;
}

static int cmp_past(const void *a, const void *b) {
    const past *x = a, *y = b;
    int c = cmp_id(x->ms, x->seq, y->ms, y->seq);
    return c ? c : strcmp(x->subject, y->subject);
}

typedef struct subjects {
    char **names;
    size_t n;
} subjects;

static eddy_status keep_subject(const eddy_subject_info *si, void *user) {
    subjects *s = user;
    char **bigger = realloc(s->names, (s->n + 1) * sizeof(*bigger));
    if (!bigger)
        return EDDY_ERR_NOMEM;
    s->names = bigger;
    if (!(s->names[s->n] = strdup(si->subject)))
        return EDDY_ERR_NOMEM;
    s->n++;
    return EDDY_OK;
}

/* RFC 3339 (2026-01-31T12:00:00Z, fractions and offsets too) to milliseconds since the epoch. */
static bool rfc3339_ms(const char *s, unsigned long long *out) {
    struct tm tm = {0};
    int used = 0;
    char sep;
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &sep,
               &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &used) != 7 ||
        (sep != 'T' && sep != 't' && sep != ' ') || used != 19)
        return false;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 ||
        tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    const char *p = s + used;
    long long frac_ms = 0;
    if (*p == '.') {
        int digits = 0;
        for (p++; *p >= '0' && *p <= '9'; p++, digits++)
            if (digits < 3)
                frac_ms = frac_ms * 10 + (*p - '0');
        if (digits == 0)
            return false;
        for (; digits < 3; digits++)
            frac_ms *= 10;
    }
    long long offset_s = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int oh, om, n = 0;
        if (sscanf(p + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5 || oh > 23 || om > 59)
            return false;
        offset_s = (*p == '+' ? 1 : -1) * (oh * 3600LL + om * 60LL);
        p += 6;
    } else {
        return false;
    }
    if (*p)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    long long t = (long long)timegm(&tm) - offset_s;
    /* Before 1970 is before every entry id. */
    *out = t < 0 ? 0 : (unsigned long long)t * 1000ULL + (unsigned long long)frac_ms;
    return true;
}

/* --from as the library's `from`: NULL for start, an id, or a time's first millisecond. */
static int history_from(cli *c, const char *from, char *out, size_t size, const char **id) {
    unsigned long long ms, seq;
    *id = NULL;
    if (!from || strcmp(from, "start") == 0)
        return -1;
    if (parse_id(from, &ms, &seq)) {
        *id = from;
        return -1;
    }
    if (!rfc3339_ms(from, &ms))
        return cli_usage(c,
                         "--from '%s': not 'start', an entry id (1700000000000-0) or an RFC 3339 "
                         "time (2026-01-31T12:00:00Z)",
                         from);
    snprintf(out, size, "%llu", ms);
    *id = out;
    return -1;
}

static eddy_status nomem(eddy_error *err) {
    snprintf(err->detail, sizeof(err->detail), "out of memory");
    err->status = EDDY_ERR_NOMEM;
    return EDDY_ERR_NOMEM;
}

static void history_free(history *h) {
    for (size_t i = 0; i < h->n; i++) {
        free(h->items[i].subject);
        free(h->items[i].entry_id);
        eddy_event_free(h->items[i].ev);
    }
    free(h->items);
}

/* One subject's history, printed as it is read (nothing to merge). */
typedef struct direct {
    tail_state *t;
    shown_upto *upto;
} direct;

static eddy_status print_entry(const char *subject, const char *entry_id, const eddy_event *ev,
                               const char *why, void *user) {
    direct *d = user;
    tail_state *t = d->t;
    unsigned long long ms, seq;
    if (!ev || !parse_id(entry_id, &ms, &seq)) {
        fprintf(stderr, "eddy tail: %s entry %s is not an eddy event (%s); not shown\n", subject,
                entry_id, why ? why : "?");
        return EDDY_OK;
    }
    d->upto->ms = ms;
    d->upto->seq = seq;
    if (t->count > 0 && t->printed >= t->count)
        return EDDY_ERR_CANCELLED;
    if (!print_event(t, subject, entry_id, 0, ev)) {
        t->failed = true;
        return EDDY_ERR_CANCELLED;
    }
    if (++t->printed == t->count) {
        cli_wait_done();
        return EDDY_ERR_CANCELLED;
    }
    return EDDY_OK;
}

/* Under t->lock: prints the merged history of several subjects, oldest first. */
static void print_merged(tail_state *t, history *h, long long last) {
    if (h->n > 1)
        qsort(h->items, h->n, sizeof(*h->items), cmp_past);
    for (size_t i = 0; i < h->n; i++) /* everything read counts as shown */
        for (size_t k = 0; k < t->nupto; k++)
            if (strcmp(t->upto[k].subject, h->items[i].subject) == 0 &&
                cmp_id(h->items[i].ms, h->items[i].seq, t->upto[k].ms, t->upto[k].seq) > 0) {
                t->upto[k].ms = h->items[i].ms;
                t->upto[k].seq = h->items[i].seq;
            }
    size_t first = last > 0 && h->n > (size_t)last ? h->n - (size_t)last : 0;
    for (size_t i = first; i < h->n; i++) {
        if (t->count > 0 && t->printed >= t->count)
            break;
        if (!print_event(t, h->items[i].subject, h->items[i].entry_id, 0, h->items[i].ev)) {
            t->failed = true;
            break;
        }
        if (++t->printed == t->count)
            cli_wait_done();
    }
}

/* Reads and prints the history (one subject as it is read; several read whole, then merged by
 * entry id); sets t->upto. Returns -1 or an exit code. */
static int print_history(cli *c, tail_state *t, const eddy_settings *s, const char *pattern,
                         const char *from, long long last) {
    eddy_admin *a;
    eddy_error err = {0};
    eddy_status st = eddy_admin_open(s, &a, &err);
    if (st != EDDY_OK)
        return cli_fail_connect(c, "cannot read the history", st, &err);
    subjects subs = {0};
    history h = {0};
    st = eddy_admin_subjects(a, pattern, keep_subject, &subs, &err);
    pthread_mutex_lock(&t->lock); /* the live handler waits for history_done anyway */
    if (st == EDDY_OK && !(t->upto = calloc(subs.n ? subs.n : 1, sizeof(*t->upto))))
        st = nomem(&err);
    for (size_t i = 0; st == EDDY_OK && i < subs.n; i++)
        if ((t->upto[i].subject = strdup(subs.names[i])))
            t->nupto++;
        else
            st = nomem(&err);
    if (st == EDDY_OK && subs.n == 1) {
        direct d = {t, &t->upto[0]};
        st = eddy_admin_history(a, subs.names[0], from, (size_t)last, print_entry, &d, &err);
        if (st == EDDY_ERR_CANCELLED)
            st = EDDY_OK; /* the count was reached, or stdout failed (t->failed) */
    } else {
        for (size_t i = 0; st == EDDY_OK && i < subs.n; i++)
            st = eddy_admin_history(a, subs.names[i], from, (size_t)last, keep_entry, &h, &err);
        if (st == EDDY_OK)
            print_merged(t, &h, last);
    }
    pthread_mutex_unlock(&t->lock);
    eddy_admin_close(a);
    history_free(&h);
    for (size_t i = 0; i < subs.n; i++)
        free(subs.names[i]);
    free(subs.names);
    return st == EDDY_OK ? -1 : cli_fail(c, "cannot read the history", st, &err);
}

int cmd_tail(cli *c, int argc, char **argv) {
    const char *group = NULL, *from = NULL;
    long long count = 0, timeout = 0, last = 0;
    cli_opt opts[] = {{"group", 's', &group}, {"count", 'n', &count}, {"timeout", 'n', &timeout},
                      {"from", 's', &from},   {"last", 'n', &last},   {NULL, 0, NULL}};
    char *pos[1];
    int npos, rc = cli_parse(c, argc, argv, opts, pos, 1, &npos);
    if (rc >= 0)
        return rc;
    if (c->help)
        return cli_help(help);
    if (npos != 1)
        return cli_usage(c, "which pattern? (eddy tail PATTERN ...)");
    bool want_history = from || last > 0;
    if (want_history && group)
        return cli_usage(c, "--from and --last read the history: a fan-out tail's, not a group's "
                            "(leave out --group)");
    char from_buf[32];
    const char *from_id;
    if ((rc = history_from(c, from, from_buf, sizeof(from_buf), &from_id)) >= 0)
        return rc;
    eddy_settings s;
    if ((rc = cli_settings(c, &s)) >= 0)
        return rc;
    cli_block_signals();
    tail_state t = {.count = count, .raw = c->raw, .history_done = !want_history};
    pthread_mutex_init(&t.lock, NULL);
    pthread_cond_init(&t.history_done_cv, NULL);
    s.workers = 1; /* printed in the order read */
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "eddy-tail";
    spec.pattern = pos[0];
    spec.handler = on_event;
    spec.user = &t;
    if (group) {
        spec.shape = EDDY_COMPETING;
        spec.group = group;
        spec.delivery = EDDY_AT_LEAST_ONCE;
    } else {
        spec.shape = EDDY_FANOUT;
    }
    eddy_error err = {0};
    eddy_bus *bus = NULL;
    eddy_status st = eddy_bus_new(&s, &spec, 1, &bus, &err);
    if (st != EDDY_OK)
        rc = cli_fail_connect(c, "cannot subscribe", st, &err);
    else if ((st = eddy_bus_start(bus, &err)) != EDDY_OK)
        rc = cli_fail_connect(c, "cannot start", st, &err);
    if (rc < 0) {
        cli_connected(true);
        if (want_history) {
            rc = print_history(c, &t, &s, pos[0], from_id, last);
            pthread_mutex_lock(&t.lock);
            t.history_done = true;
            pthread_cond_broadcast(&t.history_done_cv);
            pthread_mutex_unlock(&t.lock);
        }
    }
    int waited = 1;
    if (rc < 0 && !t.failed && (count == 0 || t.printed < count))
        waited = cli_wait(timeout);
    eddy_bus_free(bus); /* stops: a handler running now finishes first */
    pthread_cond_destroy(&t.history_done_cv);
    pthread_mutex_destroy(&t.lock);
    for (size_t i = 0; i < t.nupto; i++)
        free(t.upto[i].subject);
    free(t.upto);
    if (rc >= 0)
        return rc;
    if (t.failed) {
        fprintf(stderr, "eddy tail: cannot write to stdout; stopped (the event is handed back)\n");
        return CLI_FAILED;
    }
    if (waited < 0 && count > 0 && t.printed < count) {
        fprintf(stderr, "eddy tail: %lld of %lld events before the timeout\n", t.printed, count);
        return CLI_NO_REPLY;
    }
    return CLI_OK;
}

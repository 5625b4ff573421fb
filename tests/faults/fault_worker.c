/* SPDX-License-Identifier: BSD-3-Clause */
/* fault_worker: the processes the fault suite kills. Each mode runs one front end's bus (or feed)
 * against the suite's redis-server, prints "ready" on stdout once started, and runs until it is
 * killed (SIGKILL, the fault) or asked to stop (SIGTERM, a clean end):
 *   consume  <frontend> <url> <ns> <subject> <group> <file> <hold_us>   AtLeastOnce, records each
 *            handled event id as a line in file (written before the handler returns, so a line
 *            never means a message lost; a kill between the write and the ack makes a
 *            duplicate), then holds the message hold_us microseconds
 *   respond  <frontend> <url> <ns> <subject> <group> <delay_ms>   a responder that counts each
 *            execution in the Redis hash {ns}:faults:exec (field: the request's event id), then
 *            sleeps delay_ms and replies
 *   feed     <frontend> <url> <ns> <subject> <group> <dedup_cache_size> <file> [resume]   a
 *            catch-up feed listener (worker_feed.c; resume: its model is kept in Redis and the
 *            replay resumes from it)
 *   transform <frontend> <url> <ns> <subject> <group> <out_subject> <file> <hold_us>   a
 *            transactional handler (AtLeastOnce): records each input's id as a line in file (each
 *            run of the handler, duplicates included), emits "o<n>" for input "m<n>" to
 *            out_subject (eddy_delivery_emit), holds hold_us microseconds and succeeds
 *   hold     <frontend> <url> <ns> <subject> <group> <hold_ms>   AtLeastOnce with claim_refresh:
 *            each message is held (EDDY_PENDING) hold_ms, then finished; prints "got <id>" when
 *            it is handed over and "done <id>" once it is finished
 * frontend is "blocking" or "reactive". */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"
#include "eddy/blocking.h"
#include "eddy/event.h"
#include "eddy/reactive.h"
#include "fault_worker.h"
#include "faults.h"

static volatile sig_atomic_t stop_asked;
static void on_term(int sig) {
    (void)sig;
    stop_asked = 1;
}

void fw_say(const char *fmt, ...) {
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof(line) - 2)
        n = (int)sizeof(line) - 2;
    line[n++] = '\n';
    if (write(1, line, (size_t)n) != n)
        _exit(3); /* the suite is gone */
}

bool fw_stop_asked(void) { return stop_asked != 0; }

static const driver *driver_of(const char *name) {
    if (strcmp(name, "blocking") == 0)
        return &blocking_driver;
    if (strcmp(name, "reactive") == 0)
        return &reactive_driver;
    fprintf(stderr, "unknown front end %s\n", name);
    exit(2);
}

/* Runs a bus with one subscription until SIGTERM. */
static int run_bus(const driver *dr, const char *url, const char *ns,
                   const eddy_subscription_spec *sp) {
    eddy_settings s;
    fx_settings(&s, url, ns);
    s.log_user = (void *)sp->name;
    tbus *b = NULL;
    eddy_error err = {0};
    if (dr->bus_new(&s, sp, 1, &b, &err) != EDDY_OK || dr->start(b, &err) != EDDY_OK) {
        fprintf(stderr, "worker %s: %s\n", sp->name, err.detail);
        return 1;
    }
    fw_say("instance %s", dr->name[0] == 'b' ? eddy_bus_instance(dr->native(b))
                                             : eddy_rbus_instance(dr->native(b)));
    fw_say("ready");
    while (!fw_stop_asked())
        fx_sleep_ms(20);
    dr->stop(b);
    dr->free(b);
    return 0;
}

/* ---- consume ------------------------------------------------------------------------------- */

typedef struct consumer {
    int fd;
    long long hold_us; /* each message takes this long, so that a kill finds some in hand */
} consumer;

static eddy_status record_handled(eddy_delivery *d, void *user) {
    consumer *c = user;
    char line[96];
    int n = snprintf(line, sizeof(line), "%s\n", eddy_event_id(eddy_delivery_event(d)));
    if (write(c->fd, line, (size_t)n) != n)
        return EDDY_ERR_HANDLER_FAILED;
    if (c->hold_us > 0) {
        struct timespec ts = {0, (long)(c->hold_us * 1000)};
        nanosleep(&ts, NULL);
    }
    return EDDY_OK;
}

static int consume(const driver *dr, char **a) {
    static consumer c;
    c.fd = open(a[5], O_WRONLY | O_CREAT | O_APPEND, 0600);
    c.hold_us = atoll(a[6]);
    if (c.fd < 0) {
        perror(a[5]);
        return 1;
    }
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", a[3], a[4], EDDY_AT_LEAST_ONCE);
    sp.handler = record_handled;
    sp.user = &c;
    return run_bus(dr, a[1], a[2], &sp);
}

/* ---- transform --------------------------------------------------------------------------- */

typedef struct transformer {
    consumer rec;
    const char *out_subject;
} transformer;

static eddy_status transform_once(eddy_delivery *d, void *user) {
    transformer *t = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    char line[96];
    int n = snprintf(line, sizeof(line), "%s\n", id);
    if (write(t->rec.fd, line, (size_t)n) != n)
        return EDDY_ERR_HANDLER_FAILED;
    eddy_event *ev = eddy_event_new();
    char oid[96];
    snprintf(oid, sizeof(oid), "o%s", id + 1);
    eddy_status st = ev && eddy_event_set_id(ev, oid) == EDDY_OK &&
                             eddy_event_set_source(ev, "/faults/transform") == EDDY_OK &&
                             eddy_event_set_type(ev, "faults.out") == EDDY_OK
                         ? eddy_delivery_emit(d, t->out_subject, ev, NULL)
                         : EDDY_ERR_NOMEM;
    eddy_event_free(ev);
    if (st != EDDY_OK)
        return st;
    if (t->rec.hold_us > 0) {
        struct timespec ts = {0, (long)(t->rec.hold_us * 1000)};
        nanosleep(&ts, NULL);
    }
    return EDDY_OK;
}

static int transform(const driver *dr, char **a) {
    static transformer t;
    t.out_subject = a[5];
    t.rec.fd = open(a[6], O_WRONLY | O_CREAT | O_APPEND, 0600);
    t.rec.hold_us = atoll(a[7]);
    if (t.rec.fd < 0) {
        perror(a[6]);
        return 1;
    }
    eddy_subscription_spec sp;
    fx_competing(&sp, "transform", a[3], a[4], EDDY_AT_LEAST_ONCE);
    sp.handler = transform_once;
    sp.user = &t;
    return run_bus(dr, a[1], a[2], &sp);
}

/* ---- hold -------------------------------------------------------------------------------- */

typedef struct holder {
    const driver *dr;
    tbus *b;
    long long hold_ms;
} holder;

static holder the_holder;

typedef struct held_job {
    eddy_delivery *d;
    char id[64];
} held_job;

static void finish_held(void *arg) { eddy_delivery_finish(arg, EDDY_OK); }

/* The handler's long work, off the handler's thread (the reactive one is the loop's). */
static void *work_then_finish(void *arg) {
    held_job *j = arg;
    fx_sleep_ms(the_holder.hold_ms);
    the_holder.dr->run(the_holder.b, finish_held, j->d);
    fw_say("done %s", j->id);
    free(j);
    return NULL;
}

static eddy_status hold_long(eddy_delivery *d, void *user) {
    (void)user;
    held_job *j = calloc(1, sizeof(*j));
    if (!j)
        return EDDY_ERR_NOMEM;
    j->d = d;
    snprintf(j->id, sizeof(j->id), "%s", eddy_event_id(eddy_delivery_event(d)));
    fw_say("got %s", j->id);
    pthread_t t;
    if (pthread_create(&t, NULL, work_then_finish, j) != 0) {
        free(j);
        return EDDY_ERR_HANDLER_FAILED;
    }
    pthread_detach(t);
    return EDDY_PENDING;
}

static int hold(const driver *dr, char **a) {
    the_holder.dr = dr;
    the_holder.hold_ms = atoll(a[5]);
    eddy_subscription_spec sp;
    fx_competing(&sp, "hold", a[3], a[4], EDDY_AT_LEAST_ONCE);
    sp.handler = hold_long;
    eddy_settings s;
    fx_settings(&s, a[1], a[2]);
    s.log_user = "hold";
    s.claim_refresh = true;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &the_holder.b, &err) != EDDY_OK ||
        dr->start(the_holder.b, &err) != EDDY_OK) {
        fprintf(stderr, "worker hold: %s\n", err.detail);
        return 1;
    }
    fw_say("ready");
    while (!fw_stop_asked())
        fx_sleep_ms(20);
    dr->stop(the_holder.b);
    dr->free(the_holder.b);
    return 0;
}

/* ---- respond ------------------------------------------------------------------------------- */

typedef struct responder {
    fx_redis redis; /* the port only: fx_cmd connects per call */
    const char *ns;
    long long delay_ms;
} responder;

static eddy_status respond_once(eddy_delivery *d, eddy_event **reply, void *user) {
    responder *r = user;
    const char *id = eddy_event_id(eddy_delivery_event(d));
    if (fx_int(&r->redis, "HINCRBY {%s}:faults:exec %s 1", r->ns, id) < 1)
        return EDDY_ERR_HANDLER_FAILED; /* not counted: it did not run */
    fx_sleep_ms(r->delay_ms);
    eddy_event *ev = eddy_event_new();
    char rid[96];
    snprintf(rid, sizeof(rid), "re-%s", id);
    if (!ev || eddy_event_set_id(ev, rid) != EDDY_OK ||
        eddy_event_set_source(ev, "/faults/responder") != EDDY_OK ||
        eddy_event_set_type(ev, "faults.reply") != EDDY_OK ||
        eddy_event_set_data(ev, id, strlen(id)) != EDDY_OK) {
        eddy_event_free(ev);
        return EDDY_ERR_NOMEM;
    }
    *reply = ev;
    return EDDY_OK;
}

static int respond(const driver *dr, char **a) {
    static responder r;
    memset(&r, 0, sizeof(r));
    if (sscanf(a[1], "redis://127.0.0.1:%d", &r.redis.port) != 1) {
        fprintf(stderr, "bad url %s\n", a[1]);
        return 2;
    }
    r.ns = a[2];
    r.delay_ms = atoll(a[5]);
    eddy_subscription_spec sp;
    fx_competing(&sp, "respond", a[3], a[4], EDDY_AT_MOST_ONCE);
    sp.responder = respond_once;
    sp.user = &r;
    return run_bus(dr, a[1], a[2], &sp);
}

int main(int argc, char **argv) {
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    if (argc >= 9 && strcmp(argv[1], "consume") == 0)
        return consume(driver_of(argv[2]), argv + 2);
    if (argc >= 10 && strcmp(argv[1], "transform") == 0)
        return transform(driver_of(argv[2]), argv + 2);
    if (argc >= 8 && strcmp(argv[1], "respond") == 0)
        return respond(driver_of(argv[2]), argv + 2);
    if (argc >= 8 && strcmp(argv[1], "hold") == 0)
        return hold(driver_of(argv[2]), argv + 2);
    if (argc >= 9 && strcmp(argv[1], "feed") == 0)
        return fw_feed(strcmp(argv[2], "reactive") == 0, argv + 2);
    fprintf(stderr,
            "usage: fault_worker consume|transform|respond|feed|hold <frontend> <url> <ns> ...\n");
    return 2;
}

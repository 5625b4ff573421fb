/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy's reactive example: a publisher and two competing workers on one libev loop.
 *
 *   worker_reactive [--url URL] [--count N]
 *
 * Three buses share the loop: "worker-1" and "worker-2" subscribe to orders.placed in the
 * group "fulfilment", and a third publishes N orders once both workers are ready. Each order
 * is handled by exactly one worker. A handler does not block the loop: it returns
 * EDDY_PENDING, "works" on the order for a few milliseconds with an ev_timer, and finishes the
 * delivery from that timer (which acknowledges it). The program exits when every order of this
 * run was handled. memory:// by default; --url redis://127.0.0.1:6379 (or EDDY_URL) for Redis.
 *
 * Everything runs on the loop's thread; nothing here needs a lock. */
#include <ev.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eddy/msgpack.h"
#include "eddy/reactive.h"

typedef struct app {
    struct ev_loop *loop;
    eddy_rbus *workers[2];
    eddy_rbus *publisher;
    long long run; /* tells this run's orders from leftovers of an interrupted earlier run */
    int count, ready, published, handled;
    int status; /* exit status */
} app;

typedef struct worker {
    const char *name;
    app *app;
} worker;

/* One order being "worked on": the delivery stays ours until eddy_delivery_finish. */
typedef struct job {
    ev_timer timer;
    eddy_delivery *d;
    worker *w;
    long long order;
    bool ours;
} job;

typedef struct order {
    int n;
    long long run;
} order;

static eddy_status pack_order(msgpack_packer *pk, void *user) {
    const order *o = user;
    msgpack_pack_map(pk, 3);
    msgpack_pack_str_with_body(pk, "order", 5);
    msgpack_pack_int(pk, o->n);
    msgpack_pack_str_with_body(pk, "item", 4);
    msgpack_pack_str_with_body(pk, "teapot", 6);
    msgpack_pack_str_with_body(pk, "run", 3);
    msgpack_pack_long_long(pk, o->run);
    return EDDY_OK;
}

static void fail(app *a, const char *what, eddy_status st, const char *detail) {
    fprintf(stderr, "%s: %s%s%s\n", what, eddy_status_str(st), detail ? ": " : "",
            detail ? detail : "");
    a->status = 1;
    ev_break(a->loop, EVBREAK_ALL);
}

static void work_done(struct ev_loop *loop, ev_timer *t, int revents) {
    job *j = (job *)t; /* the timer is the job's first member */
    app *a = j->w->app;
    printf("%s (pid %d) handled order %lld (attempt %u)%s\n", j->w->name, (int)getpid(), j->order,
           eddy_delivery_attempt(j->d), j->ours ? "" : " from an earlier run");
    fflush(stdout);
    eddy_delivery_finish(j->d, EDDY_OK); /* acknowledged */
    if (j->ours && ++a->handled == a->count)
        ev_break(loop, EVBREAK_ALL);
    free(j);
}

static eddy_status handle_order(eddy_delivery *d, void *user) {
    worker *w = user;
    eddy_value *v = NULL;
    eddy_error err;
    if (eddy_delivery_decode_value(d, &v, &err) != EDDY_OK) {
        fprintf(stderr, "%s: undecodable order: %s\n", w->name, err.detail);
        return EDDY_ERR_MALFORMED; /* not acknowledged: redelivered, then dead-lettered */
    }
    const msgpack_object *o = eddy_value_object(v);
    long long n = -1, run = -1;
    if (o->type == MSGPACK_OBJECT_MAP)
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            if (kv->key.type != MSGPACK_OBJECT_STR ||
                (kv->val.type != MSGPACK_OBJECT_POSITIVE_INTEGER &&
                 kv->val.type != MSGPACK_OBJECT_NEGATIVE_INTEGER))
                continue;
            if (kv->key.via.str.size == 5 && memcmp(kv->key.via.str.ptr, "order", 5) == 0)
                n = kv->val.via.i64;
            else if (kv->key.via.str.size == 3 && memcmp(kv->key.via.str.ptr, "run", 3) == 0)
                run = kv->val.via.i64;
        }
    eddy_value_free(v);
    job *j = malloc(sizeof(*j));
    if (!j)
        return EDDY_ERR_NOMEM; /* not acknowledged: it comes back */
    j->d = d;
    j->w = w;
    j->order = n;
    j->ours = run == w->app->run;
    ev_timer_init(&j->timer, work_done, 0.005 + (double)(rand() % 20) / 1000.0, 0.);
    ev_timer_start(w->app->loop, &j->timer);
    return EDDY_PENDING;
}

static void on_published(eddy_status st, const char *entry_id, void *user) {
    app *a = user;
    if (st != EDDY_OK) {
        fail(a, "publish", st, NULL);
        return;
    }
    if (++a->published == a->count) {
        printf("published %d orders\n", a->count);
        fflush(stdout);
    }
}

static void publish_orders(app *a) {
    for (int i = 1; i <= a->count; i++) {
        order o = {i, a->run};
        eddy_error err;
        eddy_status st =
            eddy_rbus_publish_value(a->publisher, "orders.placed", "example.order.placed.v1",
                                    pack_order, &o, on_published, a, &err);
        if (st != EDDY_OK) {
            fail(a, "publish", st, err.detail);
            return;
        }
    }
}

static void on_ready(eddy_status st, const eddy_error *err, void *user) {
    app *a = user;
    if (st != EDDY_OK) {
        fail(a, "start", st, err ? err->detail : NULL);
        return;
    }
    if (++a->ready == 2) /* both workers will see what is published from now on */
        publish_orders(a);
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents) {
    app *a = t->data;
    fprintf(stderr, "only %d of %d orders handled in time\n", a->handled, a->count);
    a->status = 1;
    ev_break(loop, EVBREAK_ALL);
}

static void log_to_stderr(eddy_log_level level, const char *msg, void *user) {
    if (level >= EDDY_LOG_WARN)
        fprintf(stderr, "eddy: %s\n", msg);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--url URL] [--count N]\n", argv[0]);
            return 0;
        }
    const char *url = getenv("EDDY_URL") ? getenv("EDDY_URL") : "memory://";
    int count = 10;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 < argc && strcmp(argv[i], "--url") == 0) {
            url = argv[i + 1];
        } else if (i + 1 < argc && strcmp(argv[i], "--count") == 0) {
            count = atoi(argv[i + 1]);
        } else {
            fprintf(stderr, "usage: %s [--url URL] [--count N]\n", argv[0]);
            return 2;
        }
    }
    if (count <= 0) {
        fprintf(stderr, "--count must be at least 1\n");
        return 2;
    }
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    app a = {.loop = EV_DEFAULT, .count = count};
    a.run = (long long)time(NULL) * 100000 + getpid() % 100000;

    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = "example";
    s.source = "/examples/worker_reactive";
    s.log = log_to_stderr;
    /* Small reads, so that the two workers visibly share a short burst; the default (64)
     * favours throughput. */
    s.read_batch = 2;

    static worker workers[2] = {{"worker-1", NULL}, {"worker-2", NULL}};
    eddy_error err;
    eddy_status st;
    for (int i = 0; i < 2; i++) {
        workers[i].app = &a;
        eddy_subscription_spec spec;
        eddy_subscription_spec_init(&spec);
        spec.name = "orders";
        spec.pattern = "orders.placed";
        spec.shape = EDDY_COMPETING;
        spec.group = "fulfilment";
        spec.delivery = EDDY_AT_LEAST_ONCE;
        spec.handler = handle_order;
        spec.user = &workers[i];
        s.instance = workers[i].name;
        if ((st = eddy_rbus_new(a.loop, &s, &spec, 1, &a.workers[i], &err)) != EDDY_OK ||
            (st = eddy_rbus_start(a.workers[i], on_ready, &a, &err)) != EDDY_OK) {
            fprintf(stderr, "%s: %s: %s\n", workers[i].name, eddy_status_str(st), err.detail);
            return 1;
        }
    }
    s.instance = NULL;
    if ((st = eddy_rbus_new(a.loop, &s, NULL, 0, &a.publisher, &err)) != EDDY_OK) {
        fprintf(stderr, "publisher: %s: %s\n", eddy_status_str(st), err.detail);
        return 1;
    }
    ev_timer deadline;
    ev_timer_init(&deadline, on_deadline, 60., 0.);
    deadline.data = &a;
    ev_timer_start(a.loop, &deadline);

    ev_run(a.loop, 0); /* until every order was handled, or something failed */

    ev_timer_stop(a.loop, &deadline);
    eddy_rbus_free(a.publisher);
    /* A stopped bus that publishes nothing leaves the loop once its last acknowledgements are
     * sent, so running the loop empty is how to wait for them. A job still running (after a
     * failure) finishes its delivery from its timer meanwhile. */
    eddy_rbus_stop(a.workers[0]);
    eddy_rbus_stop(a.workers[1]);
    ev_run(a.loop, 0);
    eddy_rbus_free(a.workers[0]);
    eddy_rbus_free(a.workers[1]);
    if (a.status == 0)
        printf("all %d orders handled, each by one worker\n", count);
    return a.status;
}

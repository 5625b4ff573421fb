/* SPDX-License-Identifier: BSD-3-Clause */
/* eddy's main example: a publisher and two competing workers on the blocking front end.
 *
 *   worker_blocking [--url URL] [--count N] [--role both|publisher|worker] [--instance NAME]
 *
 * With the default memory:// backend everything runs in this one process: the publisher
 * publishes N orders and two workers in the group "fulfilment" share them, each order handled
 * by exactly one. With --url redis://127.0.0.1:6379 (or EDDY_URL) the roles can run in
 * separate processes: start several `--role worker` and one `--role publisher`. Each worker
 * process is named worker-<pid> unless --instance says otherwise, and prints its pid. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eddy/blocking.h"
#include "eddy/msgpack.h"

static atomic_int handled;

static eddy_status pack_order(msgpack_packer *pk, void *user) {
    int n = *(int *)user;
    msgpack_pack_map(pk, 2);
    msgpack_pack_str_with_body(pk, "order", 5);
    msgpack_pack_int(pk, n);
    msgpack_pack_str_with_body(pk, "item", 4);
    msgpack_pack_str_with_body(pk, "teapot", 6);
    return EDDY_OK;
}

static eddy_status handle_order(eddy_delivery *d, void *user) {
    const char *worker = user;
    eddy_value *v = NULL;
    eddy_error err;
    if (eddy_delivery_decode_value(d, &v, &err) != EDDY_OK) {
        fprintf(stderr, "%s: undecodable order: %s\n", worker, err.detail);
        return EDDY_ERR_MALFORMED; /* not acknowledged: redelivered, then dead-lettered */
    }
    const msgpack_object *o = eddy_value_object(v);
    long long order = -1;
    if (o->type == MSGPACK_OBJECT_MAP && o->via.map.size > 0)
        order = (long long)o->via.map.ptr[0].val.via.i64;
    printf("%s (pid %d) handled order %lld (attempt %u)\n", worker, (int)getpid(), order,
           eddy_delivery_attempt(d));
    fflush(stdout);
    eddy_value_free(v);
    atomic_fetch_add(&handled, 1);
    return EDDY_OK;
}

static void log_to_stderr(eddy_log_level level, const char *msg, void *user) {
    (void)user;
    if (level >= EDDY_LOG_WARN)
        fprintf(stderr, "eddy: %s\n", msg);
}

static eddy_bus *worker_bus(const eddy_settings *base, const char *instance) {
    eddy_settings s = *base;
    s.instance = instance;
    eddy_subscription_spec spec;
    eddy_subscription_spec_init(&spec);
    spec.name = "orders";
    spec.pattern = "orders.placed";
    spec.shape = EDDY_COMPETING;
    spec.group = "fulfilment";
    spec.delivery = EDDY_AT_LEAST_ONCE;
    spec.handler = handle_order;
    spec.user = (void *)instance;
    eddy_bus *bus = NULL;
    eddy_error err;
    eddy_status st = eddy_bus_new(&s, &spec, 1, &bus, &err);
    if (st == EDDY_OK && (st = eddy_bus_start(bus, &err)) != EDDY_OK) {
        eddy_bus_free(bus);
        bus = NULL;
    }
    if (st != EDDY_OK)
        fprintf(stderr, "worker %s: %s: %s\n", instance, eddy_status_str(st), err.detail);
    return bus;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s [--url URL] [--count N] [--role both|publisher|worker] [--instance "
                   "NAME]\n",
                   argv[0]);
            return 0;
        }
    const char *url = getenv("EDDY_URL") ? getenv("EDDY_URL") : "memory://";
    const char *role = "both";
    char own[32];
    snprintf(own, sizeof(own), "worker-%d", (int)getpid()); /* two processes, two names */
    const char *instance = own;
    int count = 10;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--url") == 0)
            url = argv[i + 1];
        else if (strcmp(argv[i], "--count") == 0)
            count = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--role") == 0)
            role = argv[i + 1];
        else if (strcmp(argv[i], "--instance") == 0)
            instance = argv[i + 1];
        else {
            fprintf(stderr,
                    "usage: %s [--url URL] [--count N] [--role both|publisher|worker] "
                    "[--instance NAME]\n",
                    argv[0]);
            return 2;
        }
    }
    eddy_settings s;
    eddy_settings_init(&s);
    s.url = url;
    s.ns = "example";
    s.source = "/examples/worker_blocking";
    s.log = log_to_stderr;
    s.read_batch = 1; /* one order at a time per worker: the sharing is easy to see */

    bool publish = strcmp(role, "worker") != 0, work = strcmp(role, "publisher") != 0;
    eddy_bus *w1 = NULL, *w2 = NULL;
    if (work) {
        w1 = worker_bus(&s, strcmp(role, "both") == 0 ? "worker-1" : instance);
        w2 = strcmp(role, "both") == 0 ? worker_bus(&s, "worker-2") : NULL;
        if (!w1 || (strcmp(role, "both") == 0 && !w2))
            return 1;
    }
    if (publish) {
        eddy_bus *pub = NULL;
        eddy_error err;
        eddy_status st = eddy_bus_new(&s, NULL, 0, &pub, &err);
        for (int i = 1; st == EDDY_OK && i <= count; i++)
            st = eddy_bus_publish_value(pub, "orders.placed", "example.order.placed.v1", pack_order,
                                        &i, &err);
        if (st != EDDY_OK) {
            fprintf(stderr, "publisher: %s: %s\n", eddy_status_str(st), err.detail);
            return 1;
        }
        printf("published %d orders to %s\n", count, url);
        eddy_bus_free(pub);
    }
    if (work) {
        /* Both roles: stop once every order was handled. A worker alone runs until killed. */
        struct timespec pause = {0, 10000000};
        while (strcmp(role, "both") != 0 || atomic_load(&handled) < count)
            nanosleep(&pause, NULL);
        eddy_bus_free(w1);
        eddy_bus_free(w2);
        printf("all %d orders handled, each by one worker\n", count);
    }
    return 0;
}

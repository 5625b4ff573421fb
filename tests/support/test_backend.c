/* SPDX-License-Identifier: BSD-3-Clause */
/* See test_backend.h. */
#include "test_backend.h"

#include <criterion/criterion.h>
#include <ev.h>
#include <stdio.h>

#include "eddy_test.h"
#include "raw.h"

void eddy_test_settings(eddy_settings *s, bool redis, const char *prefix, char *url,
                        size_t url_size, char *ns, size_t ns_size) {
    eddy_test_namespace(ns, ns_size, prefix);
    if (redis)
        snprintf(url, url_size, "%s", eddy_test_redis_url());
    else
        snprintf(url, url_size, "memory://%s", ns);
    eddy_settings_init(s);
    s->url = url;
    s->ns = ns;
    s->source = "/tests";
    s->log = eddy_test_log;
    s->log_user = redis ? "redis" : "memory";
}

static void tick(struct ev_loop *loop, ev_timer *w, int revents) {
    (void)loop, (void)w, (void)revents;
}

bool eddy_test_run_until(struct ev_loop *loop, const int *counter, int n, long long timeout_ms) {
    ev_timer tk;
    ev_timer_init(&tk, tick, 0.005, 0.005);
    ev_timer_start(loop, &tk);
    long long end = eddy_test_now_ms() + timeout_ms;
    while (*counter < n && eddy_test_now_ms() < end)
        ev_run(loop, EVRUN_ONCE);
    ev_timer_stop(loop, &tk);
    return *counter >= n;
}

void eddy_test_run_for(struct ev_loop *loop, long long ms) {
    int never = 0;
    eddy_test_run_until(loop, &never, 1, ms);
}

long long eddy_test_delete_history_after(const char *url, const char *ns, long long after,
                                         long long upto) {
    char key[160];
    snprintf(key, sizeof(key), "{%s}:es:all", ns);
    long long deleted = 0;
    for (long long pos = after + 1; pos <= upto;) {
        char ids[60][24];
        const char *argv[62] = {"XDEL", key};
        int argc = 2;
        for (; pos <= upto && argc < 62; pos++, argc++) {
            snprintf(ids[argc - 2], sizeof(ids[0]), "%lld-0", pos);
            argv[argc] = ids[argc - 2];
        }
        redisReply *r = raw_cmd(url, argc, argv);
        cr_assert_eq(r->type, REDIS_REPLY_INTEGER, "XDEL: %s", r->str ? r->str : "?");
        deleted += r->integer;
        freeReplyObject(r);
    }
    return deleted;
}

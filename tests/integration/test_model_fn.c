/* SPDX-License-Identifier: BSD-3-Clause */
/* The read model commit (EDDY__MODEL_FN): the memory engine's native (src/memory/model.c)
 * against the Lua (src/link/library.c) on the fixture's redis-server. Each call goes to both
 * backends; their replies and then the full contents of every key of the test are compared.
 *
 * Where they differ by design: a write failing midway (an hincr of a field holding no
 * integer, past 64 bits or by what HINCRBY reads as no integer; a key named twice that one
 * write made of the other type) leaves Redis with the writes before it and the memory engine
 * with none, and Redis appends " script: <function>, on @user_function:<line>." to the
 * error. There only the error's text before that is compared, the memory engine's keys are
 * checked unchanged, and both backends then start over from no keys.
 *
 * Then the native under out-of-memory: every allocation of a call that does every kind of
 * write fails in turn, and each failure leaves every key as it was. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy/store.h"
#include "eddy_test.h"
#include "link/library.h"
#include "memory/engine.h"
#include "memory/internal.h"
#include "raw.h"
#include "test_backend.h"
#include "util/falloc.h"
#include "util/functions.h"

#define NKEYS 11 /* k1 .. k11 (k11: the versions hash of most calls) */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Every key of the test, as text: its type and its content (a hash's pairs and a set's
 * members sorted, since neither backend promises an order). */
static void dump(const char *url, const char *ns, char *out, size_t size) {
    out[0] = '\0';
    size_t used = 0;
    for (int k = 1; k <= NKEYS; k++) {
        redisReply *t = raw_cmdf(url, "TYPE {%s}:k%d", ns, k);
        cr_assert(t && t->type == REDIS_REPLY_STATUS);
        char body[4096] = "";
        redisReply *r = NULL;
        if (strcmp(t->str, "string") == 0)
            r = raw_cmdf(url, "GET {%s}:k%d", ns, k);
        else if (strcmp(t->str, "hash") == 0)
            r = raw_cmdf(url, "HGETALL {%s}:k%d", ns, k);
        else if (strcmp(t->str, "set") == 0)
            r = raw_cmdf(url, "SMEMBERS {%s}:k%d", ns, k);
        else if (strcmp(t->str, "stream") == 0)
            r = raw_cmdf(url, "XRANGE {%s}:k%d - +", ns, k);
        if (r && r->type == REDIS_REPLY_ARRAY && strcmp(t->str, "stream") != 0) {
            bool pairs = strcmp(t->str, "hash") == 0;
            size_t n = pairs ? r->elements / 2 : r->elements;
            char **items = calloc(n + 1, sizeof(*items));
            for (size_t i = 0; i < n; i++) {
                size_t need = pairs ? r->element[2 * i]->len + r->element[2 * i + 1]->len + 2
                                    : r->element[i]->len + 1;
                items[i] = malloc(need);
                if (pairs)
                    snprintf(items[i], need, "%s=%s", r->element[2 * i]->str,
                             r->element[2 * i + 1]->str);
                else
                    snprintf(items[i], need, "%s", r->element[i]->str);
            }
            qsort(items, n, sizeof(*items), cmp_str);
            size_t b = 0;
            for (size_t i = 0; i < n; i++) {
                b += (size_t)snprintf(body + b, sizeof(body) - b, "%s,", items[i]);
                if (b >= sizeof(body))
                    b = sizeof(body) - 1;
                free(items[i]);
            }
            free(items);
        } else if (r) {
            raw_render(body, sizeof(body), r, false);
        }
        used += (size_t)snprintf(out + used, size - used, "k%d:%s:%s; ", k, t->str, body);
        cr_assert_lt(used, size, "dump too long");
        freeReplyObject(r);
        freeReplyObject(t);
    }
}

/* Splits a call on '|' into argv (words[] holds the words): "M" names the model function,
 * kN a key of the namespace, "" an empty argument. */
static int split(const char *call, const char *ns, char words[][400], const char **argv, int max) {
    char copy[1024];
    snprintf(copy, sizeof(copy), "%s", call);
    int argc = 0;
    for (char *w = copy; w && argc < max - 1; argc++) {
        char *bar = strchr(w, '|');
        if (bar)
            *bar = '\0';
        if (strcmp(w, "M") == 0) {
            argv[argc++] = "FCALL";
            snprintf(words[argc], 400, "%s", EDDY__MODEL_FN);
        } else if (w[0] == 'k' && w[1] >= '1' && w[1] <= '9') {
            snprintf(words[argc], 400, "{%.96s}:%.290s", ns, w);
        } else {
            snprintf(words[argc], 400, "%.399s", w);
        }
        argv[argc] = words[argc];
        w = bar ? bar + 1 : NULL;
    }
    return argc;
}

/* The calls. A leading '!' marks a write that fails midway (see the head comment); "RESET"
 * deletes every key on both backends. */
static const char *const calls[] = {
    /* applied, then replayed: all skipped, reply 0, nothing changes */
    "M|6|k1|k11|k2|k3|k4|k5|page|1|s|5|5|3|hset|1|a|1|hset|1|b|x|sadd|2|m1",
    "M|6|k1|k11|k2|k3|k4|k5|page|1|s|5|5|3|hset|1|a|1|hset|1|b|x|sadd|2|m1",
    /* events below and above the stored position; hincr of an existing and a new field */
    "M|6|k1|k11|k2|k3|k4|k5|page|3|s|4|4|1|hset|1|a|99|s|7|7|2|hincr|1|a|5|hincr|1|n|-3|s|9|9|2|"
    "sadd|3|z|sadd|3|z",
    /* hdel and srem, one emptying its key (its registry entry goes), one of nothing */
    "M|6|k1|k11|k2|k3|k4|k5|page|1|s|10|10|3|hdel|1|b|srem|2|m1|srem|3|nothere",
    "M|5|k1|k11|k2|k3|k4|page|1|s|11|11|3|hdel|1|a|hdel|1|n|hdel|1|gone",
    "M|5|k1|k11|k2|k3|k4|page|1|s|12|12|2|hdel|2|x|srem|1|x",
    /* del then a key of the other kind, in one call and across events */
    "M|5|k1|k11|k2|k3|k4|page|2|s|13|13|1|hset|1|f|v|s|14|14|3|del|1|sadd|1|s1|sadd|2|q",
    "M|4|k1|k11|k2|k3|page|1|s|15|15|2|del|1|hset|1|g|h",
    "M|5|k1|k11|k2|k3|k4|page|1|s|16|16|1|del|2",
    "M|5|k1|k11|k2|k3|k4|page|1|s|17|17|2|del|2|del|2",
    /* hincr negative, of a new key, twice; an event without writes */
    "M|4|k1|k11|k2|k6|page|1|s|18|18|2|hincr|1|c|-7|hincr|1|c|2",
    "M|4|k1|k11|k2|k6|page|2|s|19|19|0|s|20|20|1|hincr|1|c|-9223372036854775803",
    /* a field emptied then set again in one call; a replaced value */
    "M|4|k1|k11|k2|k3|page|1|s|21|21|3|hdel|1|g|hset|1|g|2|hset|1|g|3",
    "M|4|k1|k11|k2|k5|page|1|s|22|22|3|srem|1|z|sadd|1|z|srem|1|z",
    "M|5|k1|k11|k2|k3|k5|page|1|s|23|23|2|hset|1|g|4|sadd|2|back",
    /* leading zeros in positions and counts */
    "M|4|k1|k11|k2|k3|page|1|s|024|024|01|hset|01|z|0",
    /* WRONGTYPE on each key position, and of an operation */
    "SET|k7|x",
    "SADD|k8|m",
    "XADD|k9|1-1|f|v",
    "M|4|k3|k11|k2|k6|page|1|s|30|30|0",
    "M|4|k7|k11|k8|k6|page|1|s|30|30|0",
    "M|4|k1|k11|k8|k6|page|1|s|30|30|0",
    "M|4|k1|k11|k7|k6|page|1|s|30|30|0",
    "M|4|k1|k11|k2|k9|page|1|s|30|30|0",
    "M|5|k1|k11|k2|k6|k9|page|1|s|30|30|0",
    "M|4|k1|k11|k2|k5|page|1|s|30|30|1|hset|1|f|v",
    "M|4|k1|k11|k2|k5|page|1|s|30|30|1|hincr|1|f|1",
    "M|4|k1|k11|k2|k5|page|1|s|30|30|1|hdel|1|f",
    "M|4|k1|k11|k2|k6|page|1|s|30|30|1|sadd|1|f",
    "M|4|k1|k11|k2|k6|page|1|s|30|30|1|srem|1|f",
    "M|4|k1|k11|k2|k6|page|1|s|30|30|2|hset|1|x|1|sadd|1|m",
    "M|4|k1|k11|k2|k6|page|1|s|30|30|3|del|1|sadd|1|m|hset|1|x|1",
    "M|4|k1|k11|k2|k6|page|1|s|30|30|2|hdel|1|c|sadd|1|m",
    /* ... but not in an event below the stored position */
    "M|4|k1|k11|k2|k5|page|2|s|1|1|1|hset|1|f|v|s|30|30|1|sadd|1|w",
    /* the stored position, unreadable */
    "SET|k10|abc",
    "M|4|k10|k11|k2|k6|page|1|s|40|40|0",
    "SET|k10|",
    "M|4|k10|k11|k2|k6|page|1|s|40|40|0",
    "SET|k10|1234567890123456",
    "M|4|k10|k11|k2|k6|page|1|s|40|40|0",
    "SET|k10|-1",
    "M|4|k10|k11|k2|k6|page|1|s|40|40|0",
    "SET|k10|000",
    "M|4|k10|k11|k2|k6|page|1|s|40|40|0",
    /* wrong number of keys, bad event count */
    "M|2|k1|k11|page|1|s|1|1|0",
    "M|0|page|1|s|1|1|0",
    "M|2|k1|k11|page|x",
    "M|4|k1|k11|k2|k3|page|0|41|0",
    "M|4|k1|k11|k2|k3|page|x|41|0",
    "M|4|k1|k11|k2|k3|page|-1|41|0",
    "M|4|k1|k11|k2|k3|page|1234567890123456|s|41|41|0",
    "M|4|k1|k11|k2|k3|page",
    "M|3|k1|k11|k2|page||41|0",
    /* bad event */
    "M|4|k1|k11|k2|k3|page|1|s|0|0|0",
    "M|4|k1|k11|k2|k3|page|2|s|41|41|0|s|41|41|0",
    "M|4|k1|k11|k2|k3|page|2|s|42|42|0|s|41|41|0",
    "M|4|k1|k11|k2|k3|page|1|s|x|x|0",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|x",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|-1",
    "M|4|k1|k11|k2|k3|page|2|s|41|41|0",
    "M|4|k1|k11|k2|k3|page|1|s|41|41",
    "M|4|k1|k11|k2|k3|page|1|s|1234567890123456|1234567890123456|0",
    /* bad write */
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|HSET|1|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|set|1|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1||1|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|0|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|2|a|b",
    "M|3|k1|k11|k2|page|1|s|41|41|1|del|1",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|x|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|-1|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|1|a",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|sadd|1",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|del",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|2|hset|1|a|b",
    "M|4|k1|k11|k2|k3|page|1|s|1|1|1|hset|1|a",
    /* bad increment, also in an event below the stored position */
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|x",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|1.5",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|+1",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|-",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hincr|1|a|123456789012345678901",
    "M|4|k1|k11|k2|k3|page|1|s|1|1|1|hincr|1|a|x",
    /* wrong number of arguments */
    "M|4|k1|k11|k2|k3|page|1|s|41|41|0|extra",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|del|1|extra",
    "M|4|k1|k11|k2|k3|page|1|s|41|41|1|hset|1|a|b|c",
    /* the checks' order: keys, count, types, stored position, events, arguments */
    "M|2|k7|k11|page|x",
    "M|4|k7|k11|k2|k3|page|0",
    "M|4|k10|k11|k7|k3|page|1|s|0|0|0",
    "M|4|k1|k11|k2|k3|page|2|s|41|41|1|bad|1|50|0",
    "M|4|k1|k11|k2|k5|page|2|s|41|41|1|hset|1|f|v|s|41|41|0",
    "M|4|k1|k11|k2|k5|page|1|s|41|41|2|hset|1|f|v|hincr|1|f|x",
    "M|4|k1|k11|k2|k5|page|1|s|41|41|1|hset|1|f|v|extra",
    /* writes that fail midway: Redis keeps what came before */
    "HSET|k3|s|abc|big|9223372036854775807|neg|-9223372036854775807",
    "!M|5|k1|k11|k2|k3|k4|page|2|s|60|60|2|sadd|2|before|hset|1|t|1|s|61|61|1|hincr|1|s|1",
    "RESET",
    "HSET|k3|s|abc|big|9223372036854775807|neg|-9223372036854775807",
    "SADD|k4|m",
    "M|5|k1|k11|k2|k3|k4|page|1|s|1|1|1|hset|1|seed|1",
    "!M|5|k1|k11|k2|k3|k4|page|1|s|62|62|3|srem|2|m|hdel|1|s|hincr|1|big|1",
    "RESET",
    "HSET|k3|s|abc|big|9223372036854775807|neg|-9223372036854775807",
    "!M|5|k1|k11|k2|k3|k4|page|1|s|63|63|3|hset|1|t|2|hdel|1|s|hincr|1|neg|-3",
    "RESET",
    "!M|5|k1|k11|k2|k3|k4|page|1|s|64|64|2|hset|1|u|1|hincr|1|u|007",
    "RESET",
    "!M|5|k1|k11|k2|k3|k4|page|1|s|65|65|2|sadd|2|m|hincr|1|u|99999999999999999999",
    "RESET",
    "!M|5|k1|k11|k2|k3|k4|page|1|s|66|66|2|sadd|2|m|hincr|1|u|-0",
    "RESET",
    "!M|5|k1|k11|k2|k3|k3|page|1|s|67|67|2|hset|1|a|1|sadd|2|m",
    "RESET",
    "!M|5|k1|k11|k2|k3|k2|page|1|s|68|68|1|sadd|2|m",
    "RESET",
    /* keys named twice where nothing fails: the registry as a model key, the position too */
    "M|5|k1|k11|k2|k3|k3|page|1|s|70|70|2|hset|1|a|1|hincr|2|a|2",
    "M|5|k1|k11|k2|k3|k2|page|1|s|71|71|1|hset|2|f|v",
    "M|4|k1|k11|k2|k1|page|1|s|72|72|1|hset|1|f|v",
    "M|4|k1|k11|k2|k1|page|1|s|73|73|1|del|1",
    /* the versions: per stream, across calls and within one; live calls leave the position */
    "RESET",
    "M|4|k1|k11|k2|k3|page|2|a|1|1|1|hincr|1|n|1|b|1|2|1|hincr|1|n|1",
    "M|4|k1|k11|k2|k3|live|3|a|2|9|1|hincr|1|n|1|a|2|9|1|hincr|1|n|1|b|1|3|1|hincr|1|n|1",
    "M|4|k1|k11|k2|k3|live|2|a|1|1|1|hincr|1|n|1|b|2|1|1|hincr|1|n|1",
    "M|4|k1|k11|k2|k3|page|2|c|5|7|0|c|4|8|1|hincr|1|n|1",
    "M|4|k1|k11|k2|k3|page|1|a|1|9|0",
    /* bad mode, a bad stored version, the versions hash of another type */
    "M|4|k1|k11|k2|k3|PAGE|1|a|1|1|0",
    "M|4|k1|k11|k2|k3||1|a|1|1|0",
    "M|3|k1|k11|k2",
    "HSET|k10|a|x",
    "M|4|k1|k10|k2|k3|live|1|a|1|1|0",
    "M|4|k1|k10|k2|k3|live|1|b|1|1|0",
    "SADD|k9|m",
    "M|4|k1|k9|k2|k3|live|1|a|1|1|0",
    /* bad events of the new shape: no stream, version 0, live positions need not rise */
    "M|4|k1|k11|k2|k3|live|1||1|1|0",
    "M|4|k1|k11|k2|k3|live|1|a|0|1|0",
    "M|4|k1|k11|k2|k3|live|2|d|1|5|0|e|1|4|0",
    "M|4|k1|k11|k2|k3|page|2|f|1|5|0|g|1|4|0",
};

/* The reply as text; a Redis error cut before the " script: " it appends. */
static void render(char *out, size_t size, redisReply *r, bool cut) {
    out[0] = '\0';
    raw_render(out, size, r, true);
    char *script = cut ? strstr(out, " script: ") : NULL;
    if (script)
        script[1] = '\0'; /* raw_render ends each reply with a space */
}

Test(model_fn, memory_and_redis_agree, .timeout = 60) {
    eddy_settings sm_s, sr_s;
    char mu[128], ru[128], ns[96], rns[96];
    eddy_test_settings(&sm_s, false, "modelfn", mu, sizeof(mu), ns, sizeof(ns));
    eddy_test_settings(&sr_s, true, "modelfn", ru, sizeof(ru), rns, sizeof(rns));
    snprintf(rns, sizeof(rns), "%s", ns);
    /* Load the library on both (opening a store does). */
    eddy_store *sm = NULL, *sr = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_store_open(&sm_s, &sm, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_store_open(&sr_s, &sr, &err), EDDY_OK, "%s", err.detail);
    static char da[16384], db[16384], before[16384];
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        const char *call = calls[i];
        if (strcmp(call, "RESET") == 0) {
            for (int k = 1; k <= NKEYS; k++) {
                freeReplyObject(raw_cmdf(mu, "DEL {%s}:k%d", ns, k));
                freeReplyObject(raw_cmdf(ru, "DEL {%s}:k%d", ns, k));
            }
            continue;
        }
        bool midway = call[0] == '!';
        if (midway) {
            call++;
            dump(mu, ns, before, sizeof(before));
        }
        const char *argv[64];
        char words[64][400];
        int argc = split(call, ns, words, argv, 64);
        redisReply *a = raw_cmd(mu, argc, argv), *b = raw_cmd(ru, argc, argv);
        char ta[2048], tb[2048];
        render(ta, sizeof(ta), a, false);
        render(tb, sizeof(tb), b, midway);
        cr_expect_str_eq(ta, tb, "%s: memory %s, redis %s", calls[i], ta, tb);
        if (midway)
            cr_expect(b->type == REDIS_REPLY_ERROR && strstr(b->str, " script: "),
                      "%s: Redis fails midway: %s", call, tb);
        freeReplyObject(a);
        freeReplyObject(b);
        dump(mu, ns, da, sizeof(da));
        if (midway) {
            cr_expect_str_eq(da, before, "%s: the memory engine changed nothing", call);
            dump(ru, ns, db, sizeof(db));
            cr_expect_str_neq(db, before, "%s: Redis kept the writes before the failure", call);
        } else {
            dump(ru, ns, db, sizeof(db));
            cr_expect_str_eq(da, db, "after %s", call);
        }
    }
    eddy_store_close(sm);
    eddy_store_close(sr);
}

/* ---- out of memory ------------------------------------------------------------------------ */

/* The keys a call starts from: every kind of write then changes something. */
static const char *const oom_setup[] = {
    "SET|k1|3",
    "HSET|k11|s|3",
    "HSET|k2|k3|hash|k4|set|k5|hash",
    "HSET|k3|a|1|b|2|c|3",
    "SADD|k4|x|y|z",
    "HSET|k5|only|1",
    "EXPIRE|k5|1000",
};
static const char *const oom_call =
    "M|8|k1|k11|k2|k3|k4|k5|k6|k7|page|3|s|2|2|1|hset|1|a|9|s|4|4|9|hset|1|a|10|hset|1|d|4|hincr|1|"
    "b|5|hincr|1|"
    "e|-1|hdel|1|c|srem|2|x|sadd|2|w|del|3|sadd|3|s|s|5|5|4|hincr|4|n|1|sadd|5|m|hdel|1|a|hset|1|a|"
    "11";

static void oom_state(const char *url, const char *ns) {
    freeReplyObject(raw_cmdf(url,
                             "DEL {%s}:k1 {%s}:k2 {%s}:k3 {%s}:k4 {%s}:k5 {%s}:k6 {%s}:k7 {%s}:k11",
                             ns, ns, ns, ns, ns, ns, ns, ns));
    for (size_t i = 0; i < sizeof(oom_setup) / sizeof(oom_setup[0]); i++) {
        const char *argv[32];
        char words[32][400];
        int argc = split(oom_setup[i], ns, words, argv, 32);
        redisReply *r = raw_cmd(url, argc, argv);
        cr_assert(r && r->type != REDIS_REPLY_ERROR, "%s", oom_setup[i]);
        freeReplyObject(r);
    }
}

/* Runs the call with allocation number `fail_at` failing (once, or from then on; 0: none).
 * Returns whether it failed for lack of memory; then every key must be as it was. */
static bool oom_run(eddy__mem_engine *e, eddy__mem_conn *conn, const char *url, const char *ns,
                    long fail_at, bool sticky, char *after, size_t size) {
    static char before[8192];
    oom_state(url, ns);
    dump(url, ns, before, sizeof(before));
    const char *argv[128];
    static char words[128][400];
    int argc = split(oom_call, ns, words, argv, 128);
    size_t len[128];
    for (int i = 0; i < argc; i++)
        len[i] = strlen(argv[i]);
    long long block_ms = 0;
    eddy__falloc_fail_after(fail_at, sticky);
    redisReply *r = eddy__mem_exec(conn, argc, argv, len, &block_ms);
    eddy__falloc_fail_after(0, false);
    const char *broken = eddy__mem_engine_check(e);
    cr_assert_null(broken, "after failing allocation %ld: %s", fail_at, broken ? broken : "");
    dump(url, ns, after, size);
    if (!r) {
        cr_assert_eq(block_ms, -1, "failing allocation %ld: no reply, no OOM", fail_at);
        cr_assert_str_eq(after, before, "failing allocation %ld changed the keys", fail_at);
        return true;
    }
    cr_assert(r->type == REDIS_REPLY_INTEGER && r->integer == 2,
              "failing allocation %ld: reply type %d %s", fail_at, r->type,
              r->type == REDIS_REPLY_ERROR ? r->str : "");
    freeReplyObject(r);
    return false;
}

Test(model_fn, out_of_memory_leaves_the_keys_unchanged, .timeout = 120) {
    char ns[96], url[128];
    eddy_test_namespace(ns, sizeof(ns), "modeloom");
    snprintf(url, sizeof(url), "memory://%s", ns);
    eddy__mem_engine *e = eddy__mem_engine_acquire(ns);
    cr_assert(e);
    eddy__mem_conn *conn = eddy__mem_conn_new(e);
    cr_assert(conn);
    redisReply *load =
        raw_cmd(url, 4, (const char *[]){"FUNCTION", "LOAD", "REPLACE", eddy__library_lua});
    cr_assert(load && load->type == REDIS_REPLY_STRING, "FUNCTION LOAD");
    freeReplyObject(load);
    static char good[8192], after[8192];
    cr_assert_not(oom_run(e, conn, url, ns, 0, false, good, sizeof(good)));
    /* what the call leaves (the same on Redis: test_model_fn's first test covers it) */
    cr_expect(strstr(good, "k1:string:+5 ;"), "%s", good);
    char reg[1024];
    snprintf(reg, sizeof(reg),
             "k2:hash:{%s}:k3=hash,{%s}:k4=set,{%s}:k5=set,{%s}:k6=hash,{%s}:k7=set,;", ns, ns, ns,
             ns, ns);
    cr_expect(strstr(good, reg), "%s", good);
    cr_expect(strstr(good, "k3:hash:a=11,b=7,d=4,e=-1,;"), "%s", good);
    cr_expect(strstr(good, "k4:set:w,y,z,;"), "%s", good);
    cr_expect(strstr(good, "k5:set:s,;"), "%s", good);
    cr_expect(strstr(good, "k6:hash:n=1,;"), "%s", good);
    cr_expect(strstr(good, "k7:set:m,;"), "%s", good);
    redisReply *ttl = raw_cmdf(url, "TTL {%s}:k5", ns);
    cr_expect(ttl && ttl->integer == -1, "k5, deleted and made again, has no expiry");
    freeReplyObject(ttl);
    /* the allocations of one call, setup and dumps aside: count them by failing each in turn
     * until the call no longer fails */
    long failed = 0, n;
    for (n = 1; n < 10000; n++) {
        if (!oom_run(e, conn, url, ns, n, false, after, sizeof(after)))
            break;
        failed++;
        cr_assert_str_neq(after, good);
    }
    cr_expect_gt(failed, 10, "only %ld allocations in the call", failed);
    cr_expect_str_eq(after, good, "the call succeeds once no allocation fails");
    for (long s = 1; s <= failed; s += 2)
        cr_assert(oom_run(e, conn, url, ns, s, true, after, sizeof(after)));
    eddy__mem_conn_free(conn);
    eddy__mem_engine_release(e);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* A subscription as a bus holds it: the spec checked and copied, the group and consumer names
 * it uses in Redis, and its counters (atomics: handlers settle on worker threads). */
#ifndef EDDY_SRC_SUB_H
#define EDDY_SRC_SUB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "config/settings.h"
#include "eddy/bus.h"

typedef struct eddy__stats {
    atomic_uint_fast64_t delivered, handled, failed, redelivered, dead_lettered, malformed;
    atomic_uint_fast64_t replied, refused, unaddressed, responder_failed, expired, held;
    atomic_uint_fast64_t overlapping, recreated, lost_writes;
} eddy__stats;

typedef struct eddy__sub {
    char *name;
    char *pattern;
    char *group;    /* competing: the spec's group; fanout: "fanout.<name>.<instance>" */
    char *consumer; /* the bus's instance */
    eddy_shape shape;
    eddy_delivery_mode delivery;
    eddy_handler_fn handler;
    eddy_responder_fn responder;
    void *user;
    bool literal; /* the pattern names one subject */
    bool twin;    /* the gather twin of a responder (gather.h): reads "{ns}:all:<subject>" */
    /* Paused (consumer.c decides what that means): set from any thread, read by the reader.
     * It belongs to the subscription, so it holds across activations. */
    atomic_bool paused;
    /* In the registry's heartbeats (eddy__subs_listed): set once the subscription is ready at a
     * start, or, a late one, once its own registration came back (its group exists before a
     * requester can find it); cleared by a stop. Under the front end's lock on its subs. */
    bool listed;
    eddy__stats stats;
} eddy__sub;

/* Checks one spec (EDDY_ERR_INVALID_SPEC naming the subscription and the rule, or
 * EDDY_ERR_INVALID_PATTERN) and copies it. Ownership: *out is the caller's (eddy__sub_free). */
/* The size of eddy 0.3.0's eddy_subscription_spec, padding included: the stride of an array
 * of specs whose struct_size is 0. Frozen (fields added later come after it, and never raise the
 * struct's alignment). */
#define EDDY__SPEC_STRIDE_0_3                                                                      \
    ((offsetof(eddy_subscription_spec, paused) + sizeof(bool) + _Alignof(eddy_subscription_spec) - \
      1) /                                                                                         \
     _Alignof(eddy_subscription_spec) * _Alignof(eddy_subscription_spec))

/* The i-th spec of a caller's array, strided by the caller's struct size (specs[0]'s). */
const eddy_subscription_spec *eddy__spec_at(const eddy_subscription_spec *specs, size_t i);

eddy_status eddy__sub_new(const eddy__settings *s, const eddy_subscription_spec *spec,
                          eddy__sub **out, eddy_error *err);
void eddy__sub_free(eddy__sub *sub);

/* A bus adds a subscription: eddy__sub_new, then the checks against the bus's existing ones (n
 * of them; NULL when none): unique names; no two responders in different groups whose patterns
 * can select the same subject; no handler in a responder's group. `caps` are the backend's
 * capabilities (a responder needs request/reply). On a failure *out is NULL and nothing is
 * kept. */
eddy_status eddy__sub_new_checked(const eddy__settings *s, unsigned caps,
                                  const eddy_subscription_spec *spec, eddy__sub *const *existing,
                                  size_t n, eddy__sub **out, eddy_error *err);

void eddy__stats_snapshot(const eddy__stats *st, eddy_consumer_stats *out);
/* Adds a snapshot of st to out (a responder's counters and its gather twin's, read as one). */
void eddy__stats_add(const eddy__stats *st, eddy_consumer_stats *out);

/* The gather twin of a responder that answers scatter-gather requests (gather.h): the same
 * name, pattern, responder and pause, a fanout group of its own per instance
 * ("gather.<name>.<instance>") on the gather streams; registered as kind 'g'. The front ends
 * add it to the bus (eddy_bus_answer_all) and treat it as a subscription of its own, except
 * that the names' lookups (counters, pause) cover both. Ownership: *out is the caller's.
 * EDDY_ERR_NOMEM. */
eddy_status eddy__sub_gather_twin(const eddy__sub *responder, eddy__sub **out);
/* The stream a subscription reads for subject (malloc'd; NULL on OOM). */
char *eddy__sub_stream_key(const char *ns, const eddy__sub *sub, const char *subject);
/* A bus's subscriptions as the core reads them: the front end keeps its own record of each
 * beside, index for index, and changes both together. The array is the bus's; the
 * subscriptions are the front end records' (eddy__sub_free). Thread: the front end's lock. */
typedef struct eddy__subs {
    eddy__sub **v;
    size_t n, cap;
} eddy__subs;

void eddy__subs_free(eddy__subs *subs);
/* Room for n subscriptions, so that eddy__subs_append cannot fail. EDDY_ERR_NOMEM. */
eddy_status eddy__subs_reserve(eddy__subs *subs, size_t n);
/* Appends sub (room reserved). */
void eddy__subs_append(eddy__subs *subs, eddy__sub *sub);
/* Takes sub out, keeping the order (not freed). */
void eddy__subs_remove(eddy__subs *subs, const eddy__sub *sub);
/* The subscriptions a heartbeat renews, the same rule on both front ends: the listed ones, copied
 * to out (room for subs->n), in order; their number. */
size_t eddy__subs_listed(const eddy__subs *subs, eddy__sub **out);
/* A stop: no subscription is listed until it is ready (or registered) again. */
void eddy__subs_unlist(eddy__subs *subs);
/* A bus adds a subscription: eddy__sub_new_checked against the bus's. */
eddy_status eddy__subs_check_new(const eddy__subs *subs, const eddy__settings *s, unsigned caps,
                                 const eddy_subscription_spec *spec, eddy__sub **out,
                                 eddy_error *err);
/* A bus adds a subscription, as both front ends do: spec's, checked (eddy__subs_check_new), or
 * else *sub as given (taken: a gather twin); then room for it, so that eddy__subs_append cannot
 * fail once the front end made its own record. On a failure *sub is freed and NULL.
 * Thread: the front end's lock on its subscriptions (the array may move). */
eddy_status eddy__subs_admit(eddy__subs *subs, const eddy__settings *s, unsigned caps,
                             const eddy_subscription_spec *spec, eddy__sub **sub, eddy_error *err);
/* eddy_bus_consumer_stats / eddy_rbus_consumer_stats: the counters of the subscriptions named
 * `name`, a gather responder's and its twin's read as one; EDDY_ERR_INVALID_ARGUMENT when
 * there is none (out untouched). */
eddy_status eddy__subs_consumer_stats(const eddy__subs *subs, const char *name,
                                      eddy_consumer_stats *out);
/* eddy_bus_answer_all / eddy_rbus_answer_all, as both front ends check it: the gather twin
 * (eddy__sub_gather_twin) of the responder named `name`, for the front end to add (*twin; NULL
 * when it has one already: nothing to do), or the refusal (not a responder's name, a bus
 * started, EDDY_ERR_NOMEM). Ownership: *twin is the caller's. */
eddy_status eddy__subs_answer_all(const eddy__subs *subs, const char *name, bool started,
                                  eddy__sub **twin, eddy_error *err);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — reactive front end: a bus for programs built on a libev loop.
 *
 * Nothing here blocks: calls return at once, and outcomes arrive through callbacks on the
 * loop's thread. Every completion callback runs exactly once: with the outcome, or with
 * EDDY_ERR_CLOSED when the bus is freed first (a request: EDDY_ERR_NO_REPLY, see
 * eddy_reply_fn). A call that is refused up front (bad input) returns the refusal and does not
 * call its callback.
 *
 * Thread: every function must be called on the loop's thread (the one running ev_run).
 * From inside a callback or handler, every function may be called, including
 * eddy_rbus_free: the bus is then freed once the callback returns.
 *
 * Callbacks never run inside the call that asked for them (a publish's outcome, a start's
 * readiness, a request's reply, a handler: always later, from the loop), with two exceptions:
 * eddy_rrequest_cancel (and eddy_cancel_fire of a request's token), and teardown. Stop runs pending
 * ready callbacks with EDDY_ERR_CLOSED and the callbacks of requests still waiting with
 * EDDY_ERR_NO_REPLY before it returns; free does the same, and runs the pending publish callbacks
 * with EDDY_ERR_CLOSED before it returns (or, called from inside a callback, when that callback
 * returns). Once eddy_rbus_free was called, the bus refuses new work: publish, request, subscribe
 * and start return EDDY_ERR_CLOSED, stop is a no-op.
 *
 * Memory: a bus on memory:// keeps its in-process store alive while it lives; its commands run
 * on the loop thread and complete from the loop.
 */
#ifndef EDDY_REACTIVE_H
#define EDDY_REACTIVE_H

#include <ev.h>

#include "eddy/bus.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_rbus eddy_rbus;

/* eddy_ready_fn, the completion of eddy_rbus_start and of eddy_rbus_subscribe_ready, is in
 * eddy/bus.h (eddy_bus_subscribe_ready takes it too). */

/** Completion of a publish: the new entry id (borrowed) on EDDY_OK, NULL otherwise. */
typedef void (*eddy_publish_fn)(eddy_status st, const char *entry_id, void *user);

/** Builds a bus on `loop`: copies settings and specs, checks every rule. Connections are made
 * on the loop. Ownership: the loop stays the caller's and must outlive the bus; on EDDY_OK
 * *out is the caller's, released with eddy_rbus_free. */
EDDY_EXPORT eddy_status eddy_rbus_new(struct ev_loop *loop, const eddy_settings *settings,
                                      const eddy_subscription_spec *specs, size_t nspecs,
                                      eddy_rbus **out, eddy_error *err);

/** Adds a subscription after build; started at once when the bus is started. Same rules as
 * eddy_rbus_new. Messages published before the new subscription is ready may not reach it: use
 * eddy_rbus_subscribe_ready to learn when it is. */
EDDY_EXPORT eddy_status eddy_rbus_subscribe(eddy_rbus *bus, const eddy_subscription_spec *spec,
                                            eddy_error *err);

/** As eddy_rbus_subscribe, and `ready` (may be NULL) runs once for the new subscription: on a
 * started bus, EDDY_OK when it is ready (a message published after this point is delivered,
 * and requesters find it in the registry) or EDDY_ERR_IO when the backend could not be reached in
 * time (the subscription is then removed again, as a failed eddy_bus_subscribe leaves none); on a
 * bus not started yet, with the outcome of the next start. EDDY_ERR_CLOSED when the bus is stopped
 * or freed first. A refused subscription (bad spec) does not call it. */
EDDY_EXPORT eddy_status eddy_rbus_subscribe_ready(eddy_rbus *bus,
                                                  const eddy_subscription_spec *spec,
                                                  eddy_ready_fn ready, void *user, eddy_error *err);

/** Starts the activation. `ready` (may be NULL) runs once when it is ready or has failed. A
 * start that fails (EDDY_ERR_IO after 2 * connect_timeout_ms + 2 * reconnect_max_ms) leaves
 * the bus stopped, as the blocking front end's does. EDDY_ERR_ILLEGAL_STATE when already
 * started. A started bus keeps the loop's ev_run running (it holds an active watcher) until it
 * is stopped, or its start failed. */
EDDY_EXPORT eddy_status eddy_rbus_start(eddy_rbus *bus, eddy_ready_fn ready, void *user,
                                        eddy_error *err);

/** Stops the activation: its subscriptions leave the registry and its reply stream is deleted
 * (best effort: commands written before stop returns when the connection is up; otherwise
 * the leases end by themselves), requests still waiting end with EDDY_ERR_NO_REPLY, readers
 * stop at once, even inside a blocking read; no handler runs after stop was called (messages read
 * but not yet handed to a handler are dropped: AtLeastOnce ones come back, AtMostOnce ones are
 * gone, as at-most-once allows). Acknowledgements of handlers that already finished are still sent:
 * they are written before stop returns (memory://: applied). Deliveries whose handler returned
 * EDDY_PENDING may still be finished; their acknowledgements are sent on the stopped reader's
 * connection, which closes once the last is finished. Start may be called again at once. No-op when
 * not started. */
EDDY_EXPORT void eddy_rbus_stop(eddy_rbus *bus);

/** Stops and frees the bus without waiting for anything; pending publishes complete with
 * EDDY_ERR_CLOSED (one that reached the backend may still have been stored). A delivery whose
 * handler returned EDDY_PENDING is abandoned: it is not acknowledged and comes back, yet it
 * stays valid, and eddy_delivery_finish must still be called on it exactly once (then it only
 * releases the delivery; the bus is not touched). NULL is a no-op. */
EDDY_EXPORT void eddy_rbus_free(eddy_rbus *bus);

/** Publishes an event (checked first, as in eddy_bus_publish). `done` (may be NULL) runs once
 * with the outcome, by settings.command_timeout_ms after the call at the latest (plus the
 * connect, when one is needed): EDDY_ERR_TIMEOUT when it was sent and no reply came by then
 * (it may have been stored), EDDY_ERR_IO when it was not sent (it was not stored). The event is
 * copied before the call returns. With settings.publish_dedup_ms, a repeat of an id within the
 * window completes with EDDY_OK and the first entry's id, as in eddy_bus_publish: publishing
 * again after EDDY_ERR_TIMEOUT or EDDY_ERR_IO is safe. */
EDDY_EXPORT eddy_status eddy_rbus_publish(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                                          eddy_publish_fn done, void *user, eddy_error *err);

/** Completion of eddy_rbus_publish_batch: published is how many of the events the backend
 * accepted, in order (all of them on EDDY_OK); on an error, err (borrowed for the call) says
 * why, as eddy_bus_publish_batch's would. */
typedef void (*eddy_publish_batch_fn)(eddy_status st, size_t published, const eddy_error *err,
                                      void *user);

/** Publishes n (>= 1) events to one subject in one pipelined write, as eddy_bus_publish_batch:
 * all are checked before anything is sent (a refusal is returned and `done` does not run);
 * `done` (may be NULL) runs once, from the loop, with the outcome and how many were accepted.
 * With settings.publish_dedup_ms each event is deduplicated on its own, so the whole batch may
 * be sent again after EDDY_ERR_TIMEOUT. n == 0 is refused (EDDY_ERR_INVALID_ARGUMENT). The
 * events are copied before the call returns. */
EDDY_EXPORT eddy_status eddy_rbus_publish_batch(eddy_rbus *bus, const char *subject,
                                                const eddy_event *const *evs, size_t n,
                                                eddy_publish_batch_fn done, void *user,
                                                eddy_error *err);

/** A new event for this bus to publish, as eddy_bus_new_event builds it. Thread: any (it
 * only reads the bus's settings). */
EDDY_EXPORT eddy_status eddy_rbus_new_event(eddy_rbus *bus, const char *type, eddy_event **out,
                                            eddy_error *err);

/** Builds the event as eddy_bus_publish_value does and publishes it. */
EDDY_EXPORT eddy_status eddy_rbus_publish_value(eddy_rbus *bus, const char *subject,
                                                const char *type, eddy_pack_fn pack,
                                                void *pack_user, eddy_publish_fn done, void *user,
                                                eddy_error *err);

/** A request in flight, to cancel it. Valid from a successful eddy_rbus_request until its
 * completion callback starts; owned by the bus. */
typedef struct eddy_rrequest eddy_rrequest;

/** Completion of a request, run exactly once on the loop: EDDY_OK with the reply (ownership
 * passes to the callback: eddy_event_free it), or NULL with EDDY_ERR_NO_RESPONDERS,
 * EDDY_ERR_RESPONDER_FAILED, EDDY_ERR_NO_REPLY (deadline, cancel, stop, free: counted NoReply;
 * a request's outcome is never EDDY_ERR_CLOSED; also when Redis did not answer a step in time,
 * for the entry may have gone out), or a transport status when sending failed
 * (not counted: nothing was sent). */
typedef void (*eddy_reply_fn)(eddy_status st, eddy_event *reply, void *user);

/** Sends a request; the outcome arrives through `done` (may be NULL: the reply is then
 * dropped). Refusals before anything is sent (same order as eddy_bus_request:
 * EDDY_ERR_NO_DEADLINE, EDDY_ERR_NO_REPLY for a deadline already passed, EDDY_ERR_NOT_READY
 * (not started, or its start not ready yet), EDDY_ERR_NOT_SUPPORTED,
 * EDDY_ERR_RESERVED_ATTRIBUTE, then the publish checks; EDDY_ERR_CLOSED once free was called)
 * are returned by the call itself and `done` does not run; a fired opts->cancel is refused as
 * in eddy_bus_request (EDDY_ERR_NO_REPLY). opts->cancel (an eddy_cancel token, as for
 * eddy_bus_request) must then be fired on the loop's thread: the request ends with
 * EDDY_ERR_NO_REPLY (counted NoReply), its callback running before eddy_cancel_fire returns; free
 * the token after that call returned. *handle does the same for this request alone
 * (eddy_rrequest_cancel).
 * Ownership: the event is copied before the call returns; *handle (may be NULL) is the bus's.
 * Memory and time per request in flight are bounded: one table entry, no timer or key of its
 * own (one timer serves every deadline). */
EDDY_EXPORT eddy_status eddy_rbus_request(eddy_rbus *bus, const char *subject, const eddy_event *ev,
                                          const eddy_request_opts *opts, eddy_reply_fn done,
                                          void *user, eddy_rrequest **handle, eddy_error *err);

/** Builds the event as eddy_rbus_publish_value does, then requests as eddy_rbus_request. */
EDDY_EXPORT eddy_status eddy_rbus_request_value(eddy_rbus *bus, const char *subject,
                                                const char *type, eddy_pack_fn pack,
                                                void *pack_user, const eddy_request_opts *opts,
                                                eddy_reply_fn done, void *user,
                                                eddy_rrequest **handle, eddy_error *err);

/** Cancels a request in flight, as firing a token given to it alone would (opts->cancel): its
 * callback runs with EDDY_ERR_NO_REPLY (counted NoReply) before this returns. A request that
 * already completed must not be cancelled. NULL is a no-op. */
EDDY_EXPORT void eddy_rrequest_cancel(eddy_rrequest *req);

/** As eddy_bus_answer_all: the responder `name` answers scatter-gather requests too, from
 * the bus's next start (EDDY_ERR_ILLEGAL_STATE once started). Thread: the loop's. */
EDDY_EXPORT eddy_status eddy_rbus_answer_all(eddy_rbus *bus, const char *name, eddy_error *err);

/** One reply of a scatter-gather request, as it arrives (on the loop): st EDDY_OK with the
 * reply event, or EDDY_ERR_RESPONDER_FAILED with NULL for a failure reply. Ownership: reply is
 * borrowed until the request's completion callback returns (it is also in the list that
 * callback receives). Re-entrancy: it may call the bus (publish, request) but not free it. */
typedef void (*eddy_gather_reply_fn)(eddy_status st, const eddy_event *reply, void *user);

/** Completion of a scatter-gather request, run exactly once on the loop: the outcome as
 * eddy_bus_request_all gives it, with the replies gathered (possibly none). Ownership: replies
 * is the callback's (eddy_replies_free). */
typedef void (*eddy_gather_fn)(eddy_status st, eddy_replies *replies, void *user);

/** Sends a scatter-gather request (see "scatter-gather" in eddy/bus.h): each reply goes to
 * on_reply as it arrives (may be NULL), and the outcome with every reply to done (may be NULL:
 * the replies are then freed), at the deadline (the bus's one deadline timer), after
 * opts->max_replies replies, at the first failure with opts->stop_on_failure, on cancel (the
 * token fired on the loop's thread; done runs before eddy_cancel_fire returns) or when the bus
 * stops or is freed (EDDY_ERR_NO_REPLY). Refusals are returned by the call, as for
 * eddy_rbus_request, and no callback runs. Ownership: ev and opts are copied before the call
 * returns. */
EDDY_EXPORT eddy_status eddy_rbus_request_all(eddy_rbus *bus, const char *subject,
                                              const eddy_event *ev, const eddy_gather_opts *opts,
                                              eddy_gather_reply_fn on_reply, eddy_gather_fn done,
                                              void *user, eddy_error *err);

/** Request counters, as eddy_bus_request_stats. */
EDDY_EXPORT eddy_status eddy_rbus_request_stats(eddy_rbus *bus, const char *name,
                                                eddy_request_stats *out);

/** Pauses the subscription `name` (see "pausing" in bus.h): it reads nothing until resumed;
 * handlers that returned EDDY_PENDING still finish as usual. Works whether or not the bus is
 * started; a blocking read in progress is cut short (AtLeastOnce) and an idle wait ends, so the
 * pause takes effect at once. Pausing a paused subscription is a no-op (EDDY_OK).
 * EDDY_ERR_INVALID_ARGUMENT for an unknown name. Thread: the loop's (a handler may call it). */
EDDY_EXPORT eddy_status eddy_rbus_pause(eddy_rbus *bus, const char *name, eddy_error *err);

/** Resumes the subscription `name`: it reads its own pending entries first, then new ones.
 * Resuming a running subscription is a no-op (EDDY_OK). EDDY_ERR_INVALID_ARGUMENT for an
 * unknown name. Thread: the loop's. */
EDDY_EXPORT eddy_status eddy_rbus_resume(eddy_rbus *bus, const char *name, eddy_error *err);

/** A subscription's counters. EDDY_ERR_INVALID_ARGUMENT for an unknown name. */
EDDY_EXPORT eddy_status eddy_rbus_consumer_stats(eddy_rbus *bus, const char *name,
                                                 eddy_consumer_stats *out);

/** The consumer name this bus uses in groups. Borrowed; lives as the bus. */
EDDY_EXPORT const char *eddy_rbus_instance(const eddy_rbus *bus);

/** What the retention passes this bus ran did, over all its activations (see "retention" in
 * bus.h). EDDY_ERR_INVALID_ARGUMENT for a NULL argument. Thread: any. */
EDDY_EXPORT eddy_status eddy_rbus_retention_stats(eddy_rbus *bus, eddy_retention_stats *out);

/** The bus's counters as one JSON document, as eddy_bus_stats_json writes it, without the
 * "broker" parts: reading them takes round trips, and this call does not wait on the loop
 * ("broker_error" says so; read them with an admin handle, eddy/admin.h, on another thread).
 * Ownership: the caller's, released with free(). NULL only for a NULL bus or out of memory.
 * Thread: the loop's. */
EDDY_EXPORT char *eddy_rbus_stats_json(eddy_rbus *bus, eddy_error *err);

/** The bus's counters in the Prometheus text format, as eddy_bus_stats_prometheus writes them,
 * without the broker's figures (eddy_bus_broker_up is 0), as eddy_rbus_stats_json leaves them
 * out. Ownership: the caller's, released with free(). NULL only for a NULL bus or out of
 * memory. Thread: the loop's. */
EDDY_EXPORT char *eddy_rbus_stats_prometheus(eddy_rbus *bus, eddy_error *err);

/** The state of the bus's connections and their counters (see "connection state" in bus.h).
 * EDDY_ERR_INVALID_ARGUMENT for a NULL argument. Thread: any, also from inside
 * settings.on_connection. */
EDDY_EXPORT eddy_status eddy_rbus_connection_stats(eddy_rbus *bus, eddy_connection_stats *out);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — blocking front end: a bus for programs that use threads.
 *
 * Calls block until done; handlers run on worker threads the bus owns. Every function here is
 * safe to call from any thread, including from a handler, except eddy_bus_stop and
 * eddy_bus_free, which must not be called from a handler (they wait for handlers).
 */
#ifndef EDDY_BLOCKING_H
#define EDDY_BLOCKING_H

#include "eddy/admin.h"
#include "eddy/bus.h"
#include "eddy/dlq.h"
#include "eddy/version.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_bus eddy_bus;

/** Builds a bus: copies the settings and the specs, checks every rule (EDDY_ERR_INVALID_SPEC
 * naming the subscription), parses the URL and connects (EDDY_ERR_IO when the backend cannot
 * be reached). Subscriptions do not receive anything before eddy_bus_start.
 * Ownership: on EDDY_OK *out is the caller's, released with eddy_bus_free. */
EDDY_EXPORT eddy_status eddy_bus_new(const eddy_settings *settings,
                                     const eddy_subscription_spec *specs, size_t nspecs,
                                     eddy_bus **out, eddy_error *err);

/** Adds a subscription after build, started at once when the bus is started. Same rules. */
EDDY_EXPORT eddy_status eddy_bus_subscribe(eddy_bus *bus, const eddy_subscription_spec *spec,
                                           eddy_error *err);

/** As eddy_bus_subscribe, and `ready` (may be NULL) runs once with the new subscription's
 * readiness, as eddy_rbus_subscribe_ready's does: on a started bus, before this returns, with
 * what the call returns (EDDY_OK once it is ready and in the registry; EDDY_ERR_IO when the
 * backend could not be reached in time, the subscription then removed again); on a bus not
 * started yet, with the outcome of the next eddy_bus_start, on its thread once the start is
 * done; EDDY_ERR_CLOSED when the bus is freed first. A refused subscription (bad spec) does not
 * call it. Thread: any, except from inside `ready` for this bus's start or free; ready must not
 * call eddy_bus_start, eddy_bus_stop or eddy_bus_free. */
EDDY_EXPORT eddy_status eddy_bus_subscribe_ready(eddy_bus *bus, const eddy_subscription_spec *spec,
                                                 eddy_ready_fn ready, void *user, eddy_error *err);

/** Starts the activation: subscriptions begin reading. EDDY_ERR_ILLEGAL_STATE when already
 * started. */
EDDY_EXPORT eddy_status eddy_bus_start(eddy_bus *bus, eddy_error *err);

/** Stops the activation: readers stop at once (even inside a blocking read), running handlers
 * finish, their acknowledgements are sent. Start may be called again. No-op when stopped. */
EDDY_EXPORT eddy_status eddy_bus_stop(eddy_bus *bus);

/** Stops and frees the bus. NULL is a no-op. */
EDDY_EXPORT void eddy_bus_free(eddy_bus *bus);

/** Publishes an event to a subject. Validates the event (EDDY_ERR_INVALID_EVENT), the subject
 * (EDDY_ERR_INVALID_SUBJECT) and the size (EDDY_ERR_TOO_LARGE) first. Works whether or not
 * the bus is started. On success and when entry_id is not NULL, copies the new entry id
 * (at most entry_id_size bytes including the NUL). With settings.publish_dedup_ms, an event
 * whose id was published to the subject within the window is not appended again: EDDY_OK with
 * the first entry's id. So after EDDY_ERR_TIMEOUT (sent, outcome unknown) publishing the same
 * event again is safe: it is stored once either way. Ownership: the event stays the caller's. */
EDDY_EXPORT eddy_status eddy_bus_publish(eddy_bus *bus, const char *subject, const eddy_event *ev,
                                         char *entry_id, size_t entry_id_size, eddy_error *err);

/** Publishes n events to one subject in one pipelined round trip. All are checked before
 * anything is sent; when sending fails part-way, *published (if not NULL) says how many
 * were accepted by the backend. With settings.publish_dedup_ms each event is deduplicated on
 * its own, as by eddy_bus_publish (a second event of one id in the same batch included), and
 * counts as published: the whole batch may be sent again after EDDY_ERR_TIMEOUT. */
EDDY_EXPORT eddy_status eddy_bus_publish_batch(eddy_bus *bus, const char *subject,
                                               const eddy_event *const *evs, size_t n,
                                               size_t *published, eddy_error *err);

/** A new event for this bus to publish: a fresh UUIDv7 id, settings.source as its source
 * (EDDY_ERR_INVALID_SPEC without one), the given type and the current time (eddy_event_create).
 * Ownership: on EDDY_OK *out is the caller's (eddy_event_free). Thread: any. */
EDDY_EXPORT eddy_status eddy_bus_new_event(eddy_bus *bus, const char *type, eddy_event **out,
                                           eddy_error *err);

/** Builds an event (source from settings: EDDY_ERR_INVALID_SPEC without one; a fresh UUIDv7
 * id; the given type) whose data is the value `pack` writes, and publishes it. */
EDDY_EXPORT eddy_status eddy_bus_publish_value(eddy_bus *bus, const char *subject, const char *type,
                                               eddy_pack_fn pack, void *user, eddy_error *err);

/** Sends a request and waits for its reply. Refused before anything is sent, and not
 * counted, in this order: no deadline (EDDY_ERR_NO_DEADLINE); a deadline already passed or a
 * fired cancel token (EDDY_ERR_NO_REPLY); a bus not started (EDDY_ERR_NOT_READY); a backend
 * without request/reply (EDDY_ERR_NOT_SUPPORTED); an event carrying the `messagingfailed`
 * extension (EDDY_ERR_RESERVED_ATTRIBUTE); then the subject and event checks of publish.
 * Then: EDDY_ERR_NO_RESPONDERS at once when nothing in any process subscribes to the subject;
 * EDDY_OK with the reply; EDDY_ERR_RESPONDER_FAILED at once when the responder failed;
 * EDDY_ERR_NO_REPLY at the deadline, on cancel, or when the bus stops (also when Redis did not
 * answer a step in time: the entry may have gone out, so the deadline decides); a transport
 * status such as EDDY_ERR_IO when sending failed (not counted as sent). Never retried.
 * Ownership: on EDDY_OK *reply is the caller's (eddy_event_free). Thread: any; any number of
 * threads may wait in requests at once. */
EDDY_EXPORT eddy_status eddy_bus_request(eddy_bus *bus, const char *subject, const eddy_event *ev,
                                         const eddy_request_opts *opts, eddy_event **reply,
                                         eddy_error *err);

/** Builds the event as eddy_bus_publish_value does, then requests as eddy_bus_request. */
EDDY_EXPORT eddy_status eddy_bus_request_value(eddy_bus *bus, const char *subject, const char *type,
                                               eddy_pack_fn pack, void *user,
                                               const eddy_request_opts *opts, eddy_event **reply,
                                               eddy_error *err);

/** Makes the responder subscription `name` answer scatter-gather requests too (see
 * "scatter-gather" in eddy/bus.h): from the bus's next start, each such request to a subject
 * its pattern matches reaches this bus, as it reaches every other instance that opted in,
 * while single requests and publishes still reach one member of its group. Opt-in, because a
 * responder written for "one member answers" (one that reserves something) must not be asked
 * by all of its instances at once. The subscription keeps its name: its counters
 * (eddy_bus_consumer_stats) and pause cover both kinds of request. Call it before
 * eddy_bus_start (EDDY_ERR_ILLEGAL_STATE once started; again: EDDY_OK, nothing more);
 * EDDY_ERR_INVALID_ARGUMENT for a name that is not one of the bus's responders.
 * Thread: any, not concurrently with eddy_bus_start. */
EDDY_EXPORT eddy_status eddy_bus_answer_all(eddy_bus *bus, const char *name, eddy_error *err);

/** Sends a scatter-gather request (see "scatter-gather" in eddy/bus.h) and waits until it
 * ends: at the deadline, after opts->max_replies replies, at the first failure reply with
 * opts->stop_on_failure, on cancel or when the bus stops. Refused before anything is sent, and
 * not counted, as eddy_bus_request is (same statuses, same order), with *out NULL. Then the
 * outcome, with *out the replies gathered so far (possibly none):
 * - EDDY_OK: max_replies replies came; or, with max_replies 0, the deadline came after at least
 *   one reply;
 * - EDDY_ERR_NO_RESPONDERS, at once, when no live subscription in any process is a gather
 *   responder (eddy_bus_answer_all) matching the subject;
 * - EDDY_ERR_RESPONDER_FAILED: a failure reply came and opts->stop_on_failure is set;
 * - EDDY_ERR_NO_REPLY: the deadline came before max_replies replies (or before any reply, with
 *   max_replies 0), or the request was cancelled, or the bus stopped;
 * - EDDY_ERR_NOMEM: it would have been EDDY_OK (and is counted Answered), but a reply that came
 *   could not be kept for want of memory: *out holds the others;
 * - a transport status when sending failed (not counted as sent); Redis not answering a
 *   step in time is no failure: the deadline decides, as for eddy_bus_request.
 * Never retried. Ownership: opts and ev are borrowed for the call; *out is the caller's
 * (eddy_replies_free), NULL when the call was refused. Thread: any, as eddy_bus_request. */
EDDY_EXPORT eddy_status eddy_bus_request_all(eddy_bus *bus, const char *subject,
                                             const eddy_event *ev, const eddy_gather_opts *opts,
                                             eddy_replies **out, eddy_error *err);

/** Request counters: the total (name NULL), the unnamed row (name ""), or a declared name's
 * row; an undeclared name reads as zero. Unclaimed is in the total only. Once nothing is in
 * flight, sent == answered + no_responders + no_reply + failed. */
EDDY_EXPORT eddy_status eddy_bus_request_stats(eddy_bus *bus, const char *name,
                                               eddy_request_stats *out);

/** Pauses the subscription `name` (see "pausing" in bus.h): it reads nothing until resumed;
 * running handlers finish and are settled as usual. Works whether or not the bus is started; a
 * blocking read in progress is cut short (AtLeastOnce), so the pause takes effect at once.
 * Pausing a paused subscription is a no-op (EDDY_OK). EDDY_ERR_INVALID_ARGUMENT for an unknown
 * name. Thread: any, including a handler (it waits for nothing). */
EDDY_EXPORT eddy_status eddy_bus_pause(eddy_bus *bus, const char *name, eddy_error *err);

/** Resumes the subscription `name`: it reads its own pending entries first, then new ones.
 * Resuming a running subscription is a no-op (EDDY_OK). EDDY_ERR_INVALID_ARGUMENT for an
 * unknown name. Thread: any, including a handler. */
EDDY_EXPORT eddy_status eddy_bus_resume(eddy_bus *bus, const char *name, eddy_error *err);

/** A subscription's counters. EDDY_ERR_INVALID_ARGUMENT for an unknown name. */
EDDY_EXPORT eddy_status eddy_bus_consumer_stats(eddy_bus *bus, const char *name,
                                                eddy_consumer_stats *out);

/** The consumer name this bus uses in groups (its instance). Borrowed; lives as the bus. */
EDDY_EXPORT const char *eddy_bus_instance(const eddy_bus *bus);

/** What the retention passes this bus ran did, over all its activations (see "retention" in
 * bus.h). EDDY_ERR_INVALID_ARGUMENT for a NULL argument. Thread: any. */
EDDY_EXPORT eddy_status eddy_bus_retention_stats(eddy_bus *bus, eddy_retention_stats *out);

/** The bus's whole state as one JSON document (UTF-8, no trailing newline), for scraping:
 *   {"version", "ns", "instance", "time_ms", "started",
 *    "connection": {"state" ("connecting", "connected", "disconnected", "reconnected",
 *      "auth_failed", "not_redis"), "connects", "connect_failures", "disconnects",
 *      "disconnected_ms", "lost_writes"} (as eddy_bus_connection_stats),
 *    "subscriptions": [{"name", "pattern", "group", "shape", "delivery", "kind", "paused",
 *      "counters": {eddy_consumer_stats' fields by name},
 *      "broker": {"subjects", "pending", "lag", "oldest_pending_ms", "dead_letters"}}],
 *    "requests": {"total": {eddy_request_stats' fields}, "unnamed": {...},
 *      "named": {"<name>": {...}, ...}},
 *    "retention": {eddy_retention_stats' fields}}
 * "kind" is "responder", "handler" or "gather": a responder's scatter-gather twin
 * (eddy_bus_answer_all), an entry of its own with the responder's name, its fanout group and
 * the counters of the requests it answered (its "broker" figures are the subject streams', not
 * the gather streams'). "broker" is read from the backend at the call, on the publishing
 * connection (a few round trips, as eddy_admin_subjects): the subscription's group summed
 * over the subjects its pattern matches (lag null when the server cannot tell). When it
 * cannot be read, every "broker" is left out and "broker_error" says why; the counters are
 * there either way.
 * Ownership: the caller's, released with free(). NULL only for a NULL bus or out of memory.
 * Thread: any, including a handler. */
EDDY_EXPORT char *eddy_bus_stats_json(eddy_bus *bus, eddy_error *err);

/** The same state in the Prometheus text exposition format (version 0.0.4, UTF-8, ending in a
 * newline; serve it as "text/plain; version=0.0.4"), for a scrape endpoint the program serves:
 * every metric is named eddy_..., with the labels namespace and consumer (the bus's instance),
 * and per subscription subscription and group; counters end in _total, ages are in seconds.
 * docs/metrics.md lists them. The broker's figures (eddy_subscription_pending, _lag,
 * _oldest_pending_age_seconds, _dead_letters, _subjects) are read as for eddy_bus_stats_json;
 * when they cannot be, they are left out and eddy_bus_broker_up is 0. A lag the server cannot
 * tell is left out; the oldest pending age is 0 when nothing is pending.
 * Ownership: the caller's, released with free(). NULL only for a NULL bus or out of memory.
 * Thread: any, including a handler. */
EDDY_EXPORT char *eddy_bus_stats_prometheus(eddy_bus *bus, eddy_error *err);

/** The state of the bus's connections and their counters (see "connection state" in bus.h).
 * EDDY_ERR_INVALID_ARGUMENT for a NULL argument. Thread: any, also from inside
 * settings.on_connection. */
EDDY_EXPORT eddy_status eddy_bus_connection_stats(eddy_bus *bus, eddy_connection_stats *out);

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — what both front ends share: settings, subscription specs, deliveries, counters,
 * capabilities and the log hook.
 *
 * Settings and specs are plain structs the caller fills after an _init call; the bus copies
 * them (strings included) when it is built or when a late subscribe is made, so the caller's
 * memory may be reused as soon as the call returns.
 */
#ifndef EDDY_BUS_H
#define EDDY_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/event.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The msgpack value codec's types (value.h), declared here so that this header does not pull
 * <msgpack.h> into every program: the packer is opaque unless the program includes
 * eddy/msgpack.h, the one header tied to msgpack-c. */
struct msgpack_packer;
typedef struct eddy_value eddy_value;
typedef eddy_status (*eddy_pack_fn)(struct msgpack_packer *pk, void *user);

/* ---- log hook ---------------------------------------------------------------------- */

typedef enum eddy_log_level {
    EDDY_LOG_DEBUG,
    EDDY_LOG_INFO,
    EDDY_LOG_WARN,
    EDDY_LOG_ERROR
} eddy_log_level;

/** Receives every message eddy logs; the library never writes to stderr itself.
 * Thread: called from whichever thread logs (worker, reader, loop); must be thread-safe.
 * Ownership: msg is borrowed for the duration of the call. */
typedef void (*eddy_log_fn)(eddy_log_level level, const char *msg, void *user);

/** Static lowercase name of a log level ("debug", "info", "warn", "error"); "unknown" for a
 * value outside the enum. Never NULL. Thread: any. */
EDDY_EXPORT const char *eddy_log_level_name(eddy_log_level level);

/* ---- capabilities -------------------------------------------------------------------- */

enum {
    EDDY_CAP_GROUPS = 1u << 0,        /**< competing groups, pending entries, redelivery */
    EDDY_CAP_CROSS_PROCESS = 1u << 1, /**< other processes see the same streams */
    EDDY_CAP_REQUEST_REPLY = 1u << 2, /**< request/reply (responders, requests) */
    EDDY_CAP_EVENT_STORE = 1u << 3    /**< event store and checkpoint storage (store.h) */
};

/** The capabilities of the backend a URL names. Thread: any. */
EDDY_EXPORT eddy_status eddy_backend_capabilities(const char *url, unsigned *caps, eddy_error *err);

/* ---- connection state ---------------------------------------------------------------- *
 *
 * A bus (likewise a store or a dead-letter reader: each handle built from settings keeps its
 * own) follows all its connections as one state, and tells settings.on_connection of each
 * change once, however many connections notice it and however often they retry; each change
 * is also logged once. On Redis Cluster a redirect (MOVED, TRYAGAIN, UNBLOCKED) is routing, not
 * an outage, and a CLUSTERDOWN outage ends when a connection answers a command
 * (docs/operations.md). */

typedef enum eddy_connection_state {
    EDDY_CONN_CONNECTING, /**< nothing learnt yet (only in eddy_connection_stats) */
    EDDY_CONN_CONNECTED,  /**< the first connection came up */
    /** A connection was lost (why: the reason), or the very first attempt failed; eddy keeps
     * reconnecting with backoff. One outage is one change, whatever the number of connections. */
    EDDY_CONN_DISCONNECTED,
    EDDY_CONN_RECONNECTED, /**< a connection came up again after one of the others */
    /** The server refused the credentials (WRONGPASS, NOAUTH, NOPERM; why->status is
     * EDDY_ERR_AUTH). eddy keeps trying, every reconnect_max_ms (a password may be restored). */
    EDDY_CONN_AUTH_FAILED,
    /** The peer does not speak RESP: not a Redis server (why->status EDDY_ERR_PROTOCOL). Starting
     * fails at once with EDDY_ERR_PROTOCOL; a running bus keeps trying. */
    EDDY_CONN_NOT_REDIS
} eddy_connection_state;

/** Told of each change of the connection state. `why` is NULL for CONNECTED and RECONNECTED,
 * else the failure that made the change (its status and detail, never a password).
 * Thread: blocking front end, whichever of the bus's threads (or of the callers of its
 * functions) saw the change, one call at a time and in the order of the changes; reactive
 * front end, the loop's thread, possibly from inside a call made into the bus (such as
 * eddy_rbus_start). Re-entrancy: it must not call the bus or its objects, except
 * eddy_bus_connection_stats / eddy_rbus_connection_stats; hand the news to another thread (or
 * a timer) to act on it. Ownership: why is borrowed for the call. */
typedef void (*eddy_connection_fn)(eddy_connection_state state, const eddy_error *why, void *user);

/** Connection counters of a bus (eddy_bus_connection_stats, eddy_rbus_connection_stats). */
typedef struct eddy_connection_stats {
    eddy_connection_state state; /**< the current state */
    uint64_t connects;           /**< connections that came up (handshake done), all of the bus's */
    uint64_t connect_failures;   /**< attempts that failed (connect, handshake, refused) */
    uint64_t disconnects;        /**< connections lost after they came up (not closed by eddy) */
    uint64_t disconnected_ms;    /**< time spent in a state other than (RE)CONNECTED, once
                                      something was learnt, the current period included */
    /** Publishes the server had acknowledged to this bus and no longer had when the publishing
     * connection came back (a restart from an older snapshot, a FLUSHALL): after a lost
     * connection, the next publish to each of the 64 subjects published to most recently looks
     * at its stream (XINFO STREAM) first and counts the acknowledged ids above its
     * last-generated-id, of each subject's last 16 publish rounds (a round: a publish, or a
     * batch). A lower bound when the snapshot fell inside a round (that round counts 1) or
     * older rounds were lost too; a warning names the stream once per loss. Always 0 on
     * memory:// (the engine cannot lose acknowledged writes). */
    uint64_t lost_writes;
} eddy_connection_stats;

/* ---- settings ------------------------------------------------------------------------ */

/* Settings and the other option structs (subscription specs, feed configs, ...) start with
 * struct_size: their _init macro records there the size the program was compiled with, so a
 * library with more fields reads only those the program's struct has and takes the defaults
 * of the others (docs/compatibility.md). A struct zeroed instead (= {0}, designated
 * initializers) has the fields of eddy 0.3.0. Fields are only ever added at the end. */

typedef struct eddy_settings {
    /** Set by eddy_settings_init: the size of this struct in the caller's program. */
    size_t struct_size;
    /** Backend: "memory://[name]", "redis://[user:password@]host[:port][/db]",
     * "rediss://..." (the same over TLS: see tls_* below), "unix:///path[?db=N]", or
     * "redis-sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db]" for a
     * master that Sentinel watches (port 26379 by default; "rediss-sentinel://" is TLS to the
     * sentinels and the master). With Sentinel, every connect asks the sentinels in the order
     * given for the master's address (SENTINEL get-master-addr-by-name), connects there and
     * checks that ROLE says master, trying the next sentinel otherwise; a lost connection or a
     * READONLY reply (the master became a replica: EDDY_ERR_IO) makes the next connect ask
     * again. connect_timeout_ms bounds the whole of it. The user:password and db are the
     * master's, as redis-cli and redis-py take them; sentinel_password is the sentinels'.
     * Default "memory://". */
    const char *url;
    /** Namespace: every key of this bus is "{ns}:...". Default "eddy". */
    const char *ns;
    /** CloudEvents source for events the bus builds (publish_value). Default none. */
    const char *source;
    /** Consumer name in groups. A restart with the same name recovers its own pending
     * entries at once. Default: random per bus. */
    const char *instance;
    /** Largest event accepted on publish and on read, in bytes. Default 1 MiB. */
    size_t max_event_size;
    /** Blocking front end: handler threads the bus owns. Default 4. */
    unsigned workers;
    /** An AtLeastOnce entry is dead-lettered instead of delivered once it would be delivered
     * for the (max_deliveries + 1)-th time. Default 20. */
    unsigned max_deliveries;
    /** An AtLeastOnce entry pending this long (failed, or held by a dead process) is
     * claimed and delivered again. Default 30000. It must exceed the longest time a handler
     * takes: an entry still being handled past it is delivered again elsewhere. */
    unsigned redelivery_idle_ms;
    /** Entries read per round trip, and the most a subscription has in its handlers at once:
     * while some are still being handled (a slow handler, one that returned EDDY_PENDING) the
     * reader goes on reading new entries for the room left, so one slow message does not hold
     * up the others. Default 64. */
    unsigned read_batch;
    /** How long one blocking read waits before the reader looks around (redelivery,
     * new subjects). Stop does not wait for it. Default 1000. */
    unsigned block_ms;
    /** How often the bus looks for subjects that appeared, for all its pattern subscriptions
     * at once (one look per bus, whatever their number). A pattern subscription with no subject
     * yet starts on a new one at once; one already reading other subjects starts on it when
     * its current read ends (within block_ms). Default 250. */
    unsigned discovery_ms;
    /** Connect timeout, and the reconnect backoff range. Defaults 2000, 50, 2000. Every
     * connect of a connection waits for the backoff after its previous one, whatever ended that
     * one; the delay doubles from reconnect_min_ms (with jitter: drawn from half of it to all
     * of it) up to reconnect_max_ms, and goes back to the shortest once a connection answered a
     * command. */
    unsigned connect_timeout_ms;
    unsigned reconnect_min_ms;
    unsigned reconnect_max_ms;
    /** Trim subject streams to about this many entries on every publish (XADD MAXLEN ~).
     * 0, the default, never trims there. It keeps its old meaning and is unsafe: it can drop
     * entries a slow group has not read, uncounted. Prefer retention_max_len (see
     * "retention" below), which counts and logs what it drops. */
    long long stream_maxlen;
    eddy_log_fn log;
    void *log_user;
    /** Request names declared up front (see eddy_request_opts.name): one counter row each.
     * The array and its strings are copied. Names must be non-empty and distinct. */
    const char *const *request_names;
    size_t request_name_count;
    /** How long a subscription counts as live in the namespace's registry without a
     * heartbeat (a requester's "no responders" test), and how long a dead process's reply
     * stream survives it. Heartbeats run every lease_ms / 3. Default 10000. */
    unsigned lease_ms;
    /** Redelivery backoff: an AtLeastOnce delivery whose handler failed (any error but
     * EDDY_ERR_UNAVAILABLE) comes back redelivery_backoff_ms after its first failure, then
     * redelivery_backoff_factor times longer after each further failure, at most
     * redelivery_backoff_max_ms (and at most redelivery_idle_ms), instead of after
     * redelivery_idle_ms. An entry held by a process that died, or one whose handler overran,
     * still comes back after redelivery_idle_ms. redelivery_backoff_ms 0 turns it off.
     * Defaults 500, 2, 8000: with max_deliveries 20, a message that always fails is
     * dead-lettered about 2 minutes 15 seconds after its first delivery. */
    unsigned redelivery_backoff_ms;
    unsigned redelivery_backoff_factor;
    unsigned redelivery_backoff_max_ms;
    /** Retention of subject streams (see "retention" below): how often a pass runs, in one
     * process of the namespace at a time. Default 60000; 0 turns retention and clean-up off. */
    unsigned retention_interval_ms;
    /** Entries younger than this are never trimmed by the safe rule, so a pattern
     * subscription that has not found a new subject yet still finds them when it creates its
     * group. At least discovery_ms; it should exceed the time a bus takes to start. Default
     * 60000. */
    unsigned retention_grace_ms;
    /** Limits that may drop unread entries: a subject stream keeps no entry older than
     * retention_max_age_ms and no more than retention_max_len entries, whatever its groups
     * have read. What a limit drops is counted (eddy_retention_stats.dropped) and logged per
     * group. 0, the default, is no limit. */
    unsigned long long retention_max_age_ms;
    unsigned long long retention_max_len;
    /** The retention pass removes a group's consumer that has no pending entry, has been idle
     * longer than this and belongs to no live bus (no lease in the registry), and a named
     * instance's fanout group that no live bus holds once it has been idle that long (with what
     * it had pending). A random instance's consumer goes after lease_ms instead. A consumer
     * with pending entries is never removed. Default 86400000 (a day); 0 removes none of
     * these. */
    unsigned consumer_idle_ms;
    /** How long a call that waits on the backend and has no deadline of its own (publish,
     * publish_batch, store appends and reads, checkpoints, start) may wait for its replies; a
     * blocking read may take block_ms more. Past it the call returns EDDY_ERR_IO when its
     * commands were not all written (the server did not run them) or EDDY_ERR_TIMEOUT when
     * they were (sent, outcome unknown), and the connection is closed and made again. Requests
     * keep their own deadline. Default 5000. */
    unsigned command_timeout_ms;
    /** TLS, for rediss:// URLs (names as redis-cli's options). The server certificate is
     * verified, host name included (tls_sni, or the URL's host), against tls_cacert and/or
     * tls_cacertdir, or the system store when both are NULL. tls_cert and tls_key: a client
     * certificate and its key (PEM files) for servers that ask for one (tls-auth-clients).
     * tls_insecure: skip verification (tests only). Strings are copied; NULL is none. A
     * refused handshake or certificate is EDDY_ERR_TLS with OpenSSL's reason. */
    const char *tls_cacert;
    const char *tls_cacertdir;
    const char *tls_cert;
    const char *tls_key;
    const char *tls_sni;
    bool tls_insecure;
    /** AtLeastOnce: while a handler runs (or holds its delivery with EDDY_PENDING), tell Redis
     * every third of redelivery_idle_ms that the delivery is still being worked on (as
     * eddy_delivery_in_progress does), so that no other consumer claims it however long the
     * handler takes. A process that dies stops telling, and its deliveries are redelivered
     * after redelivery_idle_ms as before; a handler that hangs keeps its delivery for as long
     * as its process lives. Cost: one XCLAIM per held delivery per third of
     * redelivery_idle_ms, on the subscription's connection. Default false. */
    bool claim_refresh;

    /** Told of each connection state change (see "connection state" above). Default none. */
    eddy_connection_fn on_connection;
    void *on_connection_user;
    /** Idempotent publish: 0, the default, is off. Otherwise the event id is the key of a
     * publish for this many ms: publishing an event whose id was already published to the same
     * subject within the window appends nothing and succeeds with the first entry's id
     * (eddy_bus_publish's entry_id), decided atomically by the server (one Redis function per
     * event; the memory engine the same). With it on, publishing again after EDDY_ERR_TIMEOUT
     * (sent, outcome unknown) or EDDY_ERR_IO is safe, as long as it happens within the window.
     * It holds for publish, publish_batch (each event on its own, duplicates inside one batch
     * included) and the event store's append with publish; requests are never deduplicated.
     * Each subject keeps one hash and one sorted set of the ids published within the window
     * (docs/wire-format.md). 1000 to 86400000 (a day): a shorter window would not cover a
     * retry after a timeout. Redis 7 (functions) is needed. Off by default, unlike Kafka's
     * idempotent producer, because of its cost: measured with bench_pubsub (5 alternating
     * runs, medians), it keeps 12-13% of the pipelined publish rate and 38-50% of the
     * one-at-a-time rate. */
    unsigned publish_dedup_ms;
    /** redis-sentinel:// only: the password the sentinels want (AUTH, requirepass of the
     * sentinels), copied; NULL, the default, sends none. */
    const char *sentinel_password;
    /** Replicas that must have a publish before it succeeds: with wait_replicas N > 0, every
     * publish (publish, publish_batch's each event, publish_value; not requests, not the event
     * store's appends) is followed on its connection by WAIT N wait_timeout_ms, and succeeds
     * only once N replicas acknowledged it. WAIT is not consensus: a failover promotes one
     * replica, not necessarily one that had the write, and the others resync from it. Only a
     * write every replica has survives any promotion, so N = the master's number of replicas is
     * the setting that survives a failover; a smaller N only makes the loss smaller. A shortfall
     * (fewer within wait_timeout_ms) is EDDY_ERR_TIMEOUT: the master stored it, a failover may lose
     * it (publish again; with publish_dedup_ms that is safe); with redis-sentinel:// it also makes
     * the handle ask the sentinels again. Cost: every publish waits for the slowest of the N
     * replicas, the connection's later commands wait behind it (bench_wait: about 38% of
     * one-at-a-time publish throughput on loopback), and while one of the N is down, or after a
     * failover until N replicas follow the new master (Sentinel turns a live old master into
     * a replica 10 to 15 s after the switch), every publish fails after wait_timeout_ms.
     * Redis only (EDDY_ERR_INVALID_SPEC with memory://). wait_timeout_ms: 1 to below
     * command_timeout_ms; default 1000. Default wait_replicas 0: no WAIT. docs/operations.md
     * says more. */
    unsigned wait_replicas;
    unsigned wait_timeout_ms;
    /** A bus with at least this many subscriptions reads them over a few shared connections
     * instead of one each: one bus-wide blocking read (the wake-up) learns which streams have
     * news, and the woken subscriptions' reads, which do not block, go on shared connections
     * (two on the reactive front end, one on the blocking front end, whose two threads, the
     * wake-up's and the shared reads', replace a reader thread per subscription); a stream
     * that keeps having news (a hot one) reads with blocking reads on a connection (blocking:
     * and a thread) of its own until it goes quiet. So 1,000 subscriptions hold 4 or 5
     * connections (docs/threads.md). The cost, for each delivery that wakes an idle
     * subscription: one more round trip. Default 5; 1 shares always; 0 never. */
    unsigned share_reads_from;
} eddy_settings;

/** Fills every field with its default (docs/configuration.md lists them) and records the
 * caller's struct size. Thread: any. */
#define eddy_settings_init(s) eddy_settings_init_sized((s), sizeof *(s))
/** What eddy_settings_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_settings_init_sized(eddy_settings *s, size_t size);

/** Sets the setting called name (a field of eddy_settings: "command_timeout_ms",
 * docs/configuration.md) from its text form: a decimal number, true/false (also 1/0, yes/no,
 * on/off) or a string; a NULL value makes a string setting NULL (its default or none). The
 * value is checked as the bus would check it, with the same error text: EDDY_ERR_INVALID_SPEC
 * for a value out of range or not of the setting's type (the struct is then left as it was),
 * EDDY_ERR_NOT_FOUND for an unknown name, EDDY_ERR_INVALID_ARGUMENT for a callback, pointer or
 * array (set those in code) or a setting newer than the headers the program was built with.
 * Rules between two settings (reconnect_max_ms at least reconnect_min_ms, ...) are checked when
 * the settings are used. Ownership: a string setting points at value afterwards (borrowed,
 * like any string the caller puts in the struct: keep it until the bus, store or handle is
 * built, which copy it). Thread: any, on settings no other thread uses. */
EDDY_EXPORT eddy_status eddy_settings_set(eddy_settings *s, const char *name, const char *value,
                                          eddy_error *err);
/** Writes the text form of the setting called name into buf (len bytes, NUL included): what
 * eddy_settings_set accepts; a NULL string is "". EDDY_ERR_TOO_LARGE when it does not fit,
 * EDDY_ERR_NOT_FOUND for an unknown name, EDDY_ERR_INVALID_ARGUMENT for a callback, pointer or
 * array. Ownership: buf is the caller's. Thread: any. */
EDDY_EXPORT eddy_status eddy_settings_get(const eddy_settings *s, const char *name, char *buf,
                                          size_t len, eddy_error *err);
/** The name of the i-th setting, in the order of docs/configuration.md (0 is "url"); NULL
 * past the last. Every name is accepted by eddy_settings_get; those of callbacks, pointers and
 * arrays are refused by eddy_settings_set. Ownership: static. Thread: any. */
EDDY_EXPORT const char *eddy_settings_name(size_t i);

/* ---- deliveries ---------------------------------------------------------------------- */

/** One message handed to a handler. Owned by the bus; borrowed by the handler until it
 * returns, or until eddy_delivery_finish when the handler returned EDDY_PENDING. */
typedef struct eddy_delivery eddy_delivery;

/** The event. Ownership: borrowed like the delivery; eddy_event_dup to keep it. */
EDDY_EXPORT const eddy_event *eddy_delivery_event(const eddy_delivery *d);
/** The subject it was published to (borrowed). */
EDDY_EXPORT const char *eddy_delivery_subject(const eddy_delivery *d);
/** The stream entry id, e.g. "1700000000000-0" (borrowed). */
EDDY_EXPORT const char *eddy_delivery_entry_id(const eddy_delivery *d);
/** 1 for a first delivery, 2 and more for redeliveries. */
EDDY_EXPORT unsigned eddy_delivery_attempt(const eddy_delivery *d);
/** The subscription's name (borrowed). */
EDDY_EXPORT const char *eddy_delivery_subscription(const eddy_delivery *d);
/** Decodes the event's data with the msgpack value codec (see value.h). */
EDDY_EXPORT eddy_status eddy_delivery_decode_value(const eddy_delivery *d, eddy_value **out,
                                                   eddy_error *err);
/** Finishes a delivery whose handler returned EDDY_PENDING: EDDY_OK acknowledges it,
 * EDDY_ERR_UNAVAILABLE hands it back (see eddy_handler_fn), any other status counts as a failure
 * (AtLeastOnce: it stays pending and comes back); EDDY_PENDING here is a failure too
 * (EDDY_ERR_HANDLER_FAILED), on both front ends. Call it exactly once; the delivery is invalid
 * afterwards. A second call soon after (or a call on a delivery whose handler returned a result) is
 * caught: logged as an error and ignored; later, the delivery's memory may be gone or serve another
 * delivery.
 * Thread: blocking front end, any thread; reactive front end, the loop's thread. */
EDDY_EXPORT void eddy_delivery_finish(eddy_delivery *d, eddy_status st);

/** Tells Redis the delivery is still being worked on: its entry's idle time is reset for this
 * consumer (XCLAIM ... JUSTID; the delivery count does not change), so another consumer's claim
 * round, which takes entries idle longer than redelivery_idle_ms, does not take it. Sent with
 * the subscription's next round trip, within about 100 ms. A handler that runs longer than
 * redelivery_idle_ms calls it more often than that (or the bus sets settings.claim_refresh).
 * If another consumer already claimed the entry (the handler overran before telling), it is
 * left to that consumer. No effect for AtMostOnce, or once the delivery is finished.
 * Thread: any, while the delivery is held (in its handler, or until eddy_delivery_finish). */
EDDY_EXPORT void eddy_delivery_in_progress(eddy_delivery *d);

/** True when the delivery is a request, i.e. someone waits for a reply to it. */
EDDY_EXPORT int eddy_delivery_is_request(const eddy_delivery *d);

/** Answers a delivery whose responder returned EDDY_PENDING: `reply` becomes the reply
 * (ownership passes to the bus, even on failure). A NULL reply, or a reply that is not a
 * valid event, makes the bus send a failure reply instead. Call it, or eddy_delivery_finish
 * with an error (the responder failed), exactly once.
 * Thread: blocking front end, any thread; reactive front end, the loop's thread. */
EDDY_EXPORT void eddy_delivery_reply(eddy_delivery *d, eddy_event *reply);

/** Builds a reply to the delivery's event: a fresh UUIDv7 id, the bus's settings.source
 * (EDDY_ERR_INVALID_SPEC without one), the given type, the current time and the request's trace
 * context (traceparent and tracestate, when well-formed). Add data and return it from the
 * responder, or pass it to eddy_delivery_reply. Ownership: on EDDY_OK *out is the caller's until
 * handed to the bus. Thread: whichever may use the delivery. */
EDDY_EXPORT eddy_status eddy_delivery_new_reply(const eddy_delivery *d, const char *type,
                                                eddy_event **out, eddy_error *err);

/** Transactional handlers (consume, transform, produce): emits an output of the delivery, an
 * event for `subject` (a subject of the bus's namespace, like a publish's) that is published
 * only if the handler succeeds, and then together with the input's acknowledgement, in one
 * atomic step on the server (one Redis function call; the memory engine the same). Call it any
 * number of times while the delivery is held (in its handler, or until eddy_delivery_finish).
 * When the handler returns EDDY_OK (or finishes with it) every output is appended to its
 * subject's stream and the input acknowledged, all or nothing, and only while the input is
 * still pending in the subscription's group: an input whose outputs were committed once is
 * acknowledged without appending them again, whether the commit is sent again after a lost
 * connection or another consumer of the group handled the same input after its
 * redelivery_idle_ms. So each input's outputs appear exactly once per group (fan-out groups
 * and competing groups alike); side effects outside Redis are not covered
 * (docs/concepts.md, "effectively once"). A handler that fails, or hands back, publishes none
 * of its outputs: they are dropped, and the input is redelivered or dead-lettered as any
 * failure. A handler that emits nothing is acknowledged as before (XACK).
 *
 * The event is copied (it stays the caller's). It is checked as a publish checks it, before
 * anything is sent: EDDY_ERR_INVALID_SUBJECT, EDDY_ERR_INVALID_EVENT, EDDY_ERR_RESERVED_ATTRIBUTE,
 * EDDY_ERR_TOO_LARGE (larger than max_event_size, more than 1991 extensions, or more than 1000
 * outputs for one delivery); the delivery is unchanged then. EDDY_ERR_ILLEGAL_STATE for a
 * responder's or an AtMostOnce subscription's delivery (its acknowledgement was sent when it
 * was read), or one that was finished. EDDY_ERR_NOMEM: the outputs are incomplete, and the
 * delivery fails whatever its handler returns (it comes back). Outputs take stream_maxlen
 * like a publish, not publish_dedup_ms (the input deduplicates them) nor wait_replicas. Redis
 * 7 (functions) is needed. Cost: one function call per input instead of one XACK per round;
 * measured with bench_pubsub (consume_txn_vs_plain: blocking front end, one output per input, 5
 * alternating runs, medians) it keeps 19% of the plain consume rate. Ownership: ev is borrowed for the call. Thread: whichever holds the
 * delivery. */
EDDY_EXPORT eddy_status eddy_delivery_emit(eddy_delivery *d, const char *subject,
                                           const eddy_event *ev, eddy_error *err);

/** A stored event's metadata (see store.h). stream_id is borrowed: for the duration of the
 * callback that received it, or as long as the delivery it came from. */
typedef struct eddy_event_meta {
    const char *stream_id;
    long long version;  /**< 1 for a stream's first event */
    long long position; /**< 1 for the store's first event */
} eddy_event_meta;

/** Fills *meta when the delivery is an event an event-store append published (the append
 * carries stream id, version and position with it) and returns 1; returns 0 otherwise. */
EDDY_EXPORT int eddy_delivery_stored_meta(const eddy_delivery *d, eddy_event_meta *meta);

/** A handler. Return EDDY_OK when the message was handled (AtLeastOnce: it is acknowledged),
 * any error when it was not (it is redelivered after redelivery_idle_ms, up to
 * max_deliveries), or EDDY_PENDING to finish later with eddy_delivery_finish.
 *
 * EDDY_ERR_UNAVAILABLE (returned, or given to eddy_delivery_finish) hands the message back:
 * nothing can take it now, but it is not at fault. AtLeastOnce: it is not acknowledged and is
 * delivered again redelivery_idle_ms after the hand-back, like a failure, but the hand-back
 * is not a failed attempt: the entry's delivery count in the group is set back (XCLAIM
 * RETRYCOUNT), so it may be handed back any number of times without being dead-lettered, and
 * the next delivery has the same eddy_delivery_attempt() as this one. It is counted in
 * eddy_consumer_stats.held, not in failed. AtMostOnce: the message was acknowledged when it
 * was read, so there is nothing to hand back: EDDY_ERR_UNAVAILABLE is a failure like any other
 * error (counted in failed; the message is gone). A responder returning it has failed.
 * Thread: blocking, a worker thread of the bus; reactive, the loop's thread. */
typedef eddy_status (*eddy_handler_fn)(eddy_delivery *d, void *user);

/** A responder: the event it returns is the reply. On EDDY_OK, *reply must be set; the bus
 * owns it afterwards. A reply without a traceparent gets the request's trace context (see
 * EDDY_TRACEPARENT); eddy_delivery_new_reply builds one with it. A refusal is a reply (say so in
 * its data). Any error status means the responder failed: the bus sends a failure reply (the caller
 * gets EDDY_ERR_RESPONDER_FAILED at once) and the failure is logged and counted here; nothing of it
 * reaches the caller. EDDY_PENDING: answer later with eddy_delivery_reply. A responder also runs
 * for a plain publish on its subject; its reply is then discarded and counted Unaddressed. Thread:
 * as for handlers. */
typedef eddy_status (*eddy_responder_fn)(eddy_delivery *d, eddy_event **reply, void *user);

/* ---- subscriptions ------------------------------------------------------------------- */

typedef enum eddy_shape {
    EDDY_COMPETING, /**< one member of the group handles each message, across processes */
    EDDY_FANOUT     /**< every subscriber gets every message published after it subscribed */
} eddy_shape;

typedef enum eddy_delivery_mode {
    EDDY_AT_MOST_ONCE, /**< acknowledged when read; a failed handler's message is gone */
    EDDY_AT_LEAST_ONCE /**< acknowledged only after the handler succeeded */
} eddy_delivery_mode;

typedef struct eddy_subscription_spec {
    /** Set by eddy_subscription_spec_init: the size of this struct in the caller's program. */
    size_t struct_size;
    /** Unique within the bus; names the counters. Required. */
    const char *name;
    /** Subject or pattern: "orders.created", "orders.*", "orders.>". Required. */
    const char *pattern;
    eddy_shape shape;
    /** Competing: the group's name, required. Fanout: must be NULL (each subscriber is its
     * own group "fanout.<name>.<instance>"). */
    const char *group;
    eddy_delivery_mode delivery;
    /** Exactly one of handler and responder. A responder must be Competing, AtMostOnce (a
     * redelivered request would answer nobody) and have a group; it needs settings.source
     * and a backend with EDDY_CAP_REQUEST_REPLY. */
    eddy_handler_fn handler;
    void *user;
    eddy_responder_fn responder;
    /** Start paused: the subscription's group is created when the bus starts (so the broker
     * keeps every message published from then on) but nothing is read until it is resumed
     * (eddy_bus_resume, eddy_rbus_resume). See "pausing" below. */
    bool paused;
} eddy_subscription_spec;

/** Zeroes the spec: Competing, AtMostOnce, no handler, not paused. Thread: any. */
#define eddy_subscription_spec_init(spec) eddy_subscription_spec_init_sized((spec), sizeof *(spec))
/** What eddy_subscription_spec_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_subscription_spec_init_sized(eddy_subscription_spec *spec, size_t size);

/* ---- pausing ------------------------------------------------------------------------- *
 *
 * A subscription may be paused and resumed (eddy_bus_pause/eddy_bus_resume on the blocking
 * front end, eddy_rbus_pause/eddy_rbus_resume on the reactive one), before or after the bus
 * starts, and across stops, starts and reconnects (the state belongs to the subscription, not
 * to an activation). A paused subscription reads no new entries and claims none: the broker
 * keeps what is published to it (its group is still created when the bus starts, and subject
 * discovery goes on for a pattern), so a paused subscription loses nothing. Deliveries already
 * handed to its handler finish normally: their acknowledgements, hand-backs, dead letters and
 * replies still go out. Resuming picks up where it left: its own pending entries first (as
 * after a restart), then new ones.
 *
 * At the moment of the pause a read may be in progress. AtLeastOnce: it is cut short (on a
 * redis:// backend the server drops the reader's connection, CLIENT KILL, through the bus's
 * publishing connection: done before the pause returns on the blocking front end, and ahead of
 * anything the bus publishes next on the reactive one), and whatever it had taken is not handed
 * out but stays pending for the subscription, to be delivered after the resume (its delivery
 * count then shows the read: the attempt may be 2).
 * AtMostOnce: its entries left the pending list when read (NOACK), so the read is not cut
 * short; it ends within block_ms and what it returns is still delivered.
 * A paused responder answers nothing: requests to it end with EDDY_ERR_NO_REPLY at their
 * deadline. */

/* ---- retention ----------------------------------------------------------------------- *
 *
 * Every retention_interval_ms, one bus activation of the namespace (the holder of a
 * lease, "{ns}:retention", renewed by its holder) runs a pass over the subject streams
 * ("{ns}:s:<subject>"; event-store streams are never trimmed). Each stream is trimmed (XTRIM
 * MINID) to the oldest entry any of its groups still needs: the lowest of each group's oldest
 * pending entry and the entry after its last-delivered one, and never above "now minus
 * retention_grace_ms". A stream on which a live subscription of the registry matches but has
 * no group yet (a pattern that has not found the subject) is not trimmed by that rule at all.
 * So an entry a group has not read and acknowledged is never dropped, unless a limit
 * (retention_max_age_ms, retention_max_len) drops it: then it is counted and logged ("dropped
 * N entries that group G had not read and acknowledged").
 *
 * Clean-up: a subscription to one subject adds it to the subject set (as a publish does), so
 * the clean-up finds it. The fanout groups of a bus whose settings.instance was NULL (a random
 * instance) are destroyed when the bus stops, and by the pass once the process died (no live
 * lease in the registry, and idle longer than lease_ms: its consumers, or the group with no
 * consumer for that long). A named instance's fanout group is kept at its stop, and removed by
 * the pass once no live lease names it and it has been idle longer than consumer_idle_ms (0
 * keeps it), with what it had pending. Consumers with nothing pending and no live lease are
 * removed after lease_ms (a random instance's) or consumer_idle_ms (a named one's; 0 keeps
 * every consumer). */

/** Counters of the retention passes this bus ran (as the namespace's holder). */
typedef struct eddy_retention_stats {
    uint64_t passes;            /**< passes run to their end as the namespace's holder */
    uint64_t trimmed;           /**< entries removed from subject streams (XTRIM's count) */
    uint64_t dropped;           /**< of those, per group, entries the group had not read and
                                     acknowledged (limits only; summed over groups) */
    uint64_t groups_removed;    /**< fanout groups of dead processes or stopped buses */
    uint64_t consumers_removed; /**< idle consumers with nothing pending */
} eddy_retention_stats;

/* ---- counters ------------------------------------------------------------------------ */

typedef struct eddy_consumer_stats {
    uint64_t delivered;     /**< handler calls */
    uint64_t handled;       /**< handler calls that succeeded */
    uint64_t failed;        /**< handler calls that failed (hand-backs are in held) */
    uint64_t redelivered;   /**< handler calls for an attempt > 1 */
    uint64_t dead_lettered; /**< entries moved to the dead-letter stream */
    uint64_t malformed;     /**< entries that could not be decoded (also dead-lettered) */
    /* Responders only: what became of each reply. */
    uint64_t replied;          /**< the reply was stored in the requester's reply stream */
    uint64_t refused;          /**< the backend refused it (reply stream gone, bad reply-to) */
    uint64_t unaddressed;      /**< a plain publish: its reply (or failure) discarded */
    uint64_t responder_failed; /**< the responder failed; a failure reply was sent */
    uint64_t expired;          /**< requests dropped unrun: their deadline had passed */
    /** AtLeastOnce handler calls that handed the message back (EDDY_ERR_UNAVAILABLE); not
     * counted in failed. */
    uint64_t held;
    /** Responders only: live responders of another group, in another bus of the namespace
     * (another process, by the registry), whose patterns can select a subject this one's can.
     * Both are accepted, as the rules allow; each such pair is logged once as a warning, naming
     * both groups, and counted here once. */
    uint64_t overlapping;
    /** Groups created again because the server lost them under the subscription (FLUSHALL, a
     * deleted stream, a restart without its data): each is logged once, naming subject and
     * group, and read again from the stream's start. */
    uint64_t recreated;
    /** Writes the server lost that this subscription had read, found when it created a group
     * again (after a reconnect, or after the group was lost): per stream, the entries it read
     * live since its previous look at the stream, plus the stream's entries-added then (0
     * before the first look), minus the stream's entries-added now (XINFO STREAM), when that
     * is positive. Each such finding, and one where only the stream's last-generated-id is
     * below an id this subscription saw, is logged once as "the server is behind". Entries
     * other consumers of a competing group read are not seen here: a lower bound then. */
    uint64_t lost_writes;
} eddy_consumer_stats;

/** Readiness: the completion of eddy_rbus_start, and of eddy_bus_subscribe_ready and
 * eddy_rbus_subscribe_ready. EDDY_OK once every subscription concerned is ready (a message
 * published after this point is delivered) and then the activation's reply stream is open and
 * its subscriptions are in the namespace's registry (requests may be sent, and answered),
 * EDDY_ERR_IO when the backend could not be reached in time, EDDY_ERR_CLOSED when the bus was
 * stopped or freed first. err is borrowed (NULL on EDDY_OK). */
typedef void (*eddy_ready_fn)(eddy_status st, const eddy_error *err, void *user);

/* ---- requests ------------------------------------------------------------------------ */

/** Milliseconds since the epoch (CLOCK_REALTIME), the clock deadlines are written in: a
 * deadline travels with the request to other processes. Thread: any. */
EDDY_EXPORT long long eddy_now_ms(void);
/** eddy_now_ms() + ms: a deadline ms from now. */
EDDY_EXPORT long long eddy_deadline_in(long long ms);

/** The cancellation token, the one form of cancellation: fired, it ends the calls given it (a
 * request, blocking or reactive, ends with EDDY_ERR_NO_REPLY; a blocking feed's catch-up,
 * go-live or held accept with EDDY_ERR_CANCELLED, see eddy/feed.h). One token may serve several
 * calls; a fired token stays fired, and calls given it later are refused or end at once. A
 * blocking call waits inside the call, so its token is fired from another thread (any); a
 * reactive request's token must be fired on the loop's thread, and its callback runs before
 * eddy_cancel_fire returns. */
typedef struct eddy_cancel eddy_cancel;
/** NULL on OOM. Ownership: the caller's; free it after the calls that use it returned.
 * Thread: any. */
EDDY_EXPORT eddy_cancel *eddy_cancel_new(void);
/** Fires the token (again: no-op). NULL is a no-op. Thread: any. */
EDDY_EXPORT void eddy_cancel_fire(eddy_cancel *c);
/** Whether the token was fired (false for NULL). Thread: any. */
EDDY_EXPORT bool eddy_cancel_fired(const eddy_cancel *c);
/** NULL is a no-op. */
EDDY_EXPORT void eddy_cancel_free(eddy_cancel *c);

typedef struct eddy_request_opts {
    /** Absolute deadline in eddy_now_ms() milliseconds. Required: 0 is refused with
     * EDDY_ERR_NO_DEADLINE; eddy picks no default. */
    long long deadline_ms;
    /** Conversation name for the counters: one of settings.request_names, or NULL. */
    const char *name;
    /** Optional cancellation token (both front ends; see eddy_cancel). */
    eddy_cancel *cancel;
} eddy_request_opts;

typedef struct eddy_request_stats {
    uint64_t sent;
    uint64_t answered;
    uint64_t no_responders;
    uint64_t no_reply;
    uint64_t failed;
    /** Replies that arrived after their request ended, or from a second responder group.
     * Counted in the total only. */
    uint64_t unclaimed;
} eddy_request_stats;

/* ---- scatter-gather ------------------------------------------------------------------ *
 *
 * A scatter-gather request (eddy_bus_request_all, eddy_rbus_request_all) is sent once and
 * reaches every live instance of every responder that opted in (eddy_bus_answer_all,
 * eddy_rbus_answer_all) and whose pattern matches the subject; their replies are gathered
 * until the deadline, until max_replies replies came, or until the first failure reply when
 * stop_on_failure is set, whichever comes first. It is one request for the counters
 * (eddy_request_stats), counted as a single request is: refusals are not counted; Sent when
 * its entry was written; then one outcome when it ends: Answered for EDDY_OK (and for the
 * EDDY_ERR_NOMEM of a gather that could not keep a reply that came), Failed for
 * EDDY_ERR_RESPONDER_FAILED, NoReply for EDDY_ERR_NO_REPLY, NoResponders (with Sent) for
 * EDDY_ERR_NO_RESPONDERS; a reply that comes after it ended (past max_replies, or the
 * deadline) is Unclaimed. */

/** Options of a scatter-gather request. Fill after eddy_gather_opts_init. */
typedef struct eddy_gather_opts {
    /** Set by eddy_gather_opts_init: the size of this struct in the caller's program. */
    size_t struct_size;
    /** Absolute deadline in eddy_now_ms() milliseconds. Required (EDDY_ERR_NO_DEADLINE), as
     * for a single request: it is also how long replies are gathered. */
    long long deadline_ms;
    /** Conversation name for the counters, as eddy_request_opts.name. */
    const char *name;
    /** Optional cancellation token: fired, the request ends with EDDY_ERR_NO_REPLY and the
     * replies gathered so far. */
    eddy_cancel *cancel;
    /** Stop once this many replies (failure replies included) came: EDDY_OK. 0, the default,
     * gathers until the deadline. */
    size_t max_replies;
    /** Stop at the first failure reply: EDDY_ERR_RESPONDER_FAILED (that reply is the last of
     * the list). Default false: a failure reply is gathered like the others. */
    bool stop_on_failure;
} eddy_gather_opts;

/** Zeroes the options: no deadline (set one), no name, gather until the deadline, failures
 * gathered. Thread: any. */
#define eddy_gather_opts_init(o) eddy_gather_opts_init_sized((o), sizeof *(o))
/** What eddy_gather_opts_init calls: writes no more than size bytes. Thread: any. */
EDDY_EXPORT void eddy_gather_opts_init_sized(eddy_gather_opts *o, size_t size);

/** The replies a scatter-gather request gathered, in the order they arrived. Ownership: the
 * caller's, from the call or callback that handed it over (eddy_replies_free). Thread: one at
 * a time. */
typedef struct eddy_replies eddy_replies;
/** How many replies (0 for NULL). */
EDDY_EXPORT size_t eddy_replies_count(const eddy_replies *r);
/** Reply i's status: EDDY_OK (a reply event), EDDY_ERR_RESPONDER_FAILED (a failure reply,
 * or a reply that could not be read: it carries nothing of the responder's error), or
 * EDDY_ERR_INVALID_ARGUMENT for an i out of range. */
EDDY_EXPORT eddy_status eddy_replies_result(const eddy_replies *r, size_t i);
/** Reply i's event (borrowed: valid until eddy_replies_free; keep it with eddy_event_dup), or
 * NULL for a failure reply or an i out of range. */
EDDY_EXPORT const eddy_event *eddy_replies_event(const eddy_replies *r, size_t i);
/** Of the replies, how many are failure replies. */
EDDY_EXPORT size_t eddy_replies_failed(const eddy_replies *r);
/** Frees the list and its events. NULL is a no-op. */
EDDY_EXPORT void eddy_replies_free(eddy_replies *r);

#ifdef __cplusplus
}
#endif
#endif

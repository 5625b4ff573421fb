/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — looking at a namespace from outside (blocking front end): the subject streams and
 * their groups (consumers, pending entries, lag, the age of the oldest pending entry, dead
 * letters), the registry of live subscriptions, and all of it as one JSON document. What the
 * `eddy` command-line tool shows (groups, registry, stats).
 *
 * Everything is read from the backend; nothing is changed, but by eddy_admin_subject_remove (what a
 * tool that made a subject of its own, such as `eddy bench`, calls to leave nothing behind). An
 * admin handle has a connection of its own: it works whether or not a bus runs (an operator's
 * tool) and on any backend a bus runs on (memory:// by name, in the same process). Figures are a
 * snapshot taken over a few round trips (one pipeline each), not one atomic view: a busy namespace
 * moves meanwhile.
 *
 * Thread: every function of a handle is safe from any thread (calls are serialised on the
 * handle's connection); callbacks run on the calling thread and may not use the handle.
 */
#ifndef EDDY_ADMIN_H
#define EDDY_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eddy/bus.h"
#include "eddy/event.h"
#include "eddy/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct eddy_admin eddy_admin;

/** Opens an admin handle on the settings' backend and namespace (url, ns, timeouts and log are
 * used) and connects (EDDY_ERR_IO when the backend cannot be reached). Ownership: the settings
 * are copied; on EDDY_OK *out is the caller's, released with eddy_admin_close. */
EDDY_EXPORT eddy_status eddy_admin_open(const eddy_settings *settings, eddy_admin **out,
                                        eddy_error *err);
/** NULL is a no-op. Thread: any, once no other call on the handle runs. */
EDDY_EXPORT void eddy_admin_close(eddy_admin *admin);

/** One consumer group on one subject stream. */
typedef struct eddy_group_info {
    const char *group;
    uint64_t consumers;
    /** Entries delivered to the group and not acknowledged yet. */
    uint64_t pending;
    /** Entries of the stream not delivered to the group yet; -1 when the server cannot tell
     * (Redis answers nil after entries were deleted from the middle of the stream). */
    long long lag;
    /** Age of the oldest pending entry by its id's time, in milliseconds of the server's clock;
     * -1 when nothing is pending. */
    long long oldest_pending_ms;
    /** The id of the last entry delivered to the group ("0-0" for none). */
    const char *last_delivered_id;
    /** Entries in the group's dead-letter stream "{ns}:dlq:<group>" (one stream per group
     * name, whatever the subject). */
    uint64_t dead_letters;
} eddy_group_info;

/** One subject of the namespace and the groups on its stream. */
typedef struct eddy_subject_info {
    const char *subject;
    /** Entries in the subject's stream (0 when the stream is gone). */
    uint64_t length;
    const eddy_group_info *groups; /**< ngroups of them, by group name */
    size_t ngroups;
} eddy_subject_info;

/** Receives one subject, borrowed for the call. Return EDDY_OK to go on; any other status stops
 * the listing, which returns it. */
typedef eddy_status (*eddy_subject_info_fn)(const eddy_subject_info *info, void *user);

/** Every subject published to in the namespace whose name the pattern matches ("orders.*",
 * "orders.>", a plain subject, or NULL for all), in name order, with its groups.
 * EDDY_ERR_INVALID_PATTERN for a bad pattern. Ownership: everything passed is borrowed. */
EDDY_EXPORT eddy_status eddy_admin_subjects(eddy_admin *admin, const char *pattern,
                                            eddy_subject_info_fn fn, void *user, eddy_error *err);

/** One live subscription of the namespace's registry: a bus's subscription (a responder or a
 * handler) whose lease has not ended. */
typedef struct eddy_registration {
    bool responder;
    const char *group;        /**< the consumer group ("fanout.<name>.<instance>" for a fanout) */
    const char *instance;     /**< the bus's instance (its consumer name) */
    const char *name;         /**< the subscription's name */
    const char *pattern;      /**< the subject or pattern it subscribes to */
    long long lease_until_ms; /**< when its lease ends unless renewed (eddy_now_ms clock) */
} eddy_registration;

typedef eddy_status (*eddy_registration_fn)(const eddy_registration *reg, void *user);

/** Every live subscription of the namespace, in the order of their lease's end (each renews
 * it every lease_ms / 3). Members the handle cannot read (written by hand) are skipped. */
EDDY_EXPORT eddy_status eddy_admin_registry(eddy_admin *admin, eddy_registration_fn fn, void *user,
                                            eddy_error *err);

/** One entry of a subject's stream, as eddy_admin_history reads it: the entry's id and its event,
 * or ev NULL and why (a short reason) when the entry is not an eddy event or exceeds the
 * settings' max_event_size. Ownership: everything is borrowed for the call (eddy_event_dup to
 * keep the event). Return EDDY_OK to go on; any other status stops the read, which returns it. */
typedef eddy_status (*eddy_history_fn)(const char *subject, const char *entry_id,
                                       const eddy_event *ev, const char *why, void *user);

/** A subject's history: the entries of its stream "{ns}:s:<subject>", oldest first, from the entry
 * id `from` (inclusive; "<ms>-<seq>", or "<ms>" for the first entry of that millisecond; NULL for
 * the first entry), all of them (last 0) or only the last `last` of those. All of them are read in
 * rounds of 256 entries, the last N in one round of N, so entries published meanwhile may or may
 * not be seen; nothing is acknowledged or changed. A subject never published to has no entries.
 * EDDY_ERR_INVALID_SUBJECT for a bad subject, EDDY_ERR_INVALID_ARGUMENT for a bad id. Thread: as
 * the handle's other calls; fn runs on the calling thread. */
EDDY_EXPORT eddy_status eddy_admin_history(eddy_admin *admin, const char *subject, const char *from,
                                           size_t last, eddy_history_fn fn, void *user,
                                           eddy_error *err);

/** The namespace as one JSON document (UTF-8, no trailing newline):
 *   {"ns": ..., "time_ms": ..., "subjects": [{"subject", "length", "entries_added", "groups":
 *    [{"group", "consumers", "pending", "lag", "oldest_pending_ms", "last_delivered_id",
 *    "dead_letters", "entries_read"}]}],
 *    "groups": [{"group", "subjects", "consumers", "pending", "lag", "oldest_pending_ms",
 *    "dead_letters"}], "registry": [{"kind", "group", "instance", "name", "pattern",
 *    "lease_until_ms"}]}
 * "subjects" as eddy_admin_subjects lists them (pattern NULL: all); "groups" sums each group
 * over those subjects (lag null when one is unknown; the oldest pending age is the largest);
 * -1 figures are written as null. Counters for rates (added after 0.3.0: readers must not
 * require them): a subject's "entries_added" (every entry ever added to its stream, trimmed
 * ones included: XINFO STREAM's entries-added) and a group's "entries_read" (entries delivered
 * to the group: XINFO GROUPS's entries-read), null when the server does not tell; their change
 * between two documents over the change of "time_ms" is a rate in and out (eddy top).
 * Ownership: the caller's, released with free(). */
EDDY_EXPORT char *eddy_admin_stats_json(eddy_admin *admin, const char *pattern, eddy_error *err);

/** The same figures in the Prometheus text exposition format (version 0.0.4, UTF-8, ending in a
 * newline), what `eddy stats --prometheus` prints and `eddy exporter` serves: gauges named
 * eddy_subjects, eddy_subject_length{subject}, eddy_subject_group_*{subject,group} (consumers,
 * pending, lag, oldest_pending_age_seconds), eddy_group_*{group} (the same summed over the
 * subjects, with subjects and dead_letters) and eddy_registry_subscriptions{group,kind}, each
 * with the label namespace (docs/metrics.md lists them). A lag the server cannot tell is left
 * out; the oldest pending age is 0 when nothing is pending. Label values are escaped as the
 * format wants (backslash, double quote, newline); bytes that are not UTF-8 become U+FFFD.
 * Errors as eddy_admin_stats_json. Ownership: the caller's, released with free(). */
EDDY_EXPORT char *eddy_admin_stats_prometheus(eddy_admin *admin, const char *pattern,
                                              eddy_error *err);

/** Removes a subject from the namespace, in one transaction (MULTI/EXEC): deletes its stream
 * "{ns}:s:<subject>" (its entries, its groups with their pending entries) and its
 * publish-dedup records, and takes it out of the namespace's subject set. Dead letters stay
 * (their streams are per group, "{ns}:dlq:<group>"). A subscription still reading the subject
 * creates its group again (counted in eddy_consumer_stats.recreated); a publish makes the
 * subject again. Meant for subjects a tool made for itself (`eddy bench`), not for live ones.
 * *removed (may be NULL) says whether there was anything to remove; a subject that is not
 * there is not an error. EDDY_ERR_INVALID_SUBJECT for a bad subject. Ownership: subject is
 * borrowed for the call. Thread: as the handle's other calls. */
EDDY_EXPORT eddy_status eddy_admin_subject_remove(eddy_admin *admin, const char *subject,
                                                  bool *removed, eddy_error *err);

#ifdef __cplusplus
}
#endif
#endif

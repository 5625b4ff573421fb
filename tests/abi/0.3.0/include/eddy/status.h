/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — status codes and optional error detail.
 *
 * Every eddy call that can fail returns an eddy_status. EDDY_OK is 0; new values are only
 * ever added at the end. Detail, where it helps, goes into a caller-owned eddy_error: the
 * library never keeps error state in globals or thread-locals and never allocates on the
 * error path.
 */
#ifndef EDDY_STATUS_H
#define EDDY_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EDDY_EXPORT __attribute__((visibility("default")))
#else
#define EDDY_EXPORT
#endif

/** Marks a name kept for one release after it was renamed (eddy/deprecated.h and
 * eddy/rdeprecated.h list them):
 * using it warns, with the new name in the message. */
#if defined(__GNUC__)
#define EDDY_DEPRECATED(msg) __attribute__((deprecated(msg)))
#else
#define EDDY_DEPRECATED(msg)
#endif

typedef enum eddy_status {
    EDDY_OK = 0,
    /** Not an error: a handler or responder that returns it finishes later (see bus.h). */
    EDDY_PENDING,
    EDDY_ERR_INVALID_ARGUMENT, /**< a NULL or out-of-range argument */
    EDDY_ERR_NOMEM,            /**< an allocation failed; nothing was changed */
    EDDY_ERR_INVALID_EVENT,    /**< a CloudEvent attribute is missing or malformed */
    EDDY_ERR_INVALID_SUBJECT,  /**< not a dot-separated subject of non-empty tokens */
    EDDY_ERR_INVALID_PATTERN,  /**< not a valid subject pattern ('*' token, trailing '>') */
    EDDY_ERR_INVALID_URL,      /**< a backend URL eddy cannot parse or does not know */
    EDDY_ERR_INVALID_SPEC,     /**< a subscription spec or setting breaks a rule */
    EDDY_ERR_TOO_LARGE,        /**< an event or entry exceeds the configured maximum */
    EDDY_ERR_MALFORMED,        /**< bytes that do not decode (bad entry, bad msgpack) */
    EDDY_ERR_IO,               /**< the connection to the backend failed */
    EDDY_ERR_PROTOCOL,         /**< the backend answered something eddy did not expect */
    EDDY_ERR_BACKEND,          /**< the backend answered with an error reply */
    /** A deadline passed before the operation finished. For a command to Redis: it was sent but
     * no reply came by its deadline, so its outcome is unknown (it may have been applied);
     * EDDY_ERR_IO means it was not sent. */
    EDDY_ERR_TIMEOUT,
    EDDY_ERR_CLOSED,             /**< the object was closed; pending work completes with it */
    EDDY_ERR_NOT_READY,          /**< the bus has no live activation */
    EDDY_ERR_NOT_SUPPORTED,      /**< the backend lacks the capability this needs */
    EDDY_ERR_NO_DEADLINE,        /**< a request was made without a deadline */
    EDDY_ERR_NO_REPLY,           /**< no reply came before the deadline, or it was cancelled */
    EDDY_ERR_NO_RESPONDERS,      /**< nothing is subscribed to the request's subject */
    EDDY_ERR_RESPONDER_FAILED,   /**< the responder failed; its error text stays with it */
    EDDY_ERR_RESERVED_ATTRIBUTE, /**< the event carries an attribute reserved to the bus */
    EDDY_ERR_ILLEGAL_STATE,      /**< the object's state does not allow this call now */
    EDDY_ERR_UNREADABLE_FILTER,  /**< a filter needs a data reader the feed does not have */
    EDDY_ERR_VERSION_CONFLICT,   /**< an append's expected version did not match */
    EDDY_ERR_HANDLER_FAILED,     /**< generic failure a handler may return */
    EDDY_ERR_CANCELLED,          /**< the operation was cancelled through its handle */
    /** Nothing can take the message now: hold it (do not acknowledge). A handler returning it
     * hands the message back without counting a failed attempt (see eddy_handler_fn). */
    EDDY_ERR_UNAVAILABLE,
    EDDY_ERR_NOT_FOUND, /**< what the call names (a dead letter's id) is not there */
    EDDY_ERR_AUTH,      /**< the server refused the credentials (WRONGPASS, NOAUTH, NOPERM) */
    EDDY_ERR_TLS,       /**< the TLS handshake failed or the server's certificate was refused */
    /** The server is out of memory (Redis at maxmemory under noeviction answered OOM): it
     * refuses writes until memory frees. Nothing was written; the same call on the same bus
     * succeeds again by itself once memory frees (no reconnect). */
    EDDY_ERR_SERVER_FULL,
    EDDY_STATUS_COUNT_ /**< not a status: the number of values above */
} eddy_status;

/** Static English text for a status ("invalid subject"). Never NULL. Thread: any. */
EDDY_EXPORT const char *eddy_status_str(eddy_status st);

/** Static symbolic name of a status ("EDDY_ERR_INVALID_SUBJECT"). Never NULL. Thread: any. */
EDDY_EXPORT const char *eddy_status_name(eddy_status st);

#define EDDY_ERROR_DETAIL_MAX 256

/** Optional, caller-owned error detail. Every call that takes an `eddy_error *` accepts NULL.
 * On failure the call sets `status` and writes a NUL-terminated explanation into `detail`
 * (for example which attribute of an event is bad); on success it leaves it untouched. */
typedef struct eddy_error {
    eddy_status status;
    char detail[EDDY_ERROR_DETAIL_MAX];
} eddy_error;

#ifdef __cplusplus
}
#endif
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Status text and names, and the one place error detail is written. Tables are indexed by
 * the enum, so a new status must be added to both tables (the static assert checks the
 * count). */
#include <stdarg.h>
#include <stdio.h>

#include "error.h"

#define STATUSES(X)                                                                                \
    X(EDDY_OK, "ok")                                                                               \
    X(EDDY_PENDING, "pending: finishes later")                                                     \
    X(EDDY_ERR_INVALID_ARGUMENT, "invalid argument")                                               \
    X(EDDY_ERR_NOMEM, "out of memory")                                                             \
    X(EDDY_ERR_INVALID_EVENT, "invalid CloudEvent")                                                \
    X(EDDY_ERR_INVALID_SUBJECT, "invalid subject")                                                 \
    X(EDDY_ERR_INVALID_PATTERN, "invalid subject pattern")                                         \
    X(EDDY_ERR_INVALID_URL, "invalid backend URL")                                                 \
    X(EDDY_ERR_INVALID_SPEC, "invalid subscription spec or setting")                               \
    X(EDDY_ERR_TOO_LARGE, "too large")                                                             \
    X(EDDY_ERR_MALFORMED, "malformed data")                                                        \
    X(EDDY_ERR_IO, "connection to the backend failed")                                             \
    X(EDDY_ERR_PROTOCOL, "unexpected reply from the backend")                                      \
    X(EDDY_ERR_BACKEND, "the backend returned an error")                                           \
    X(EDDY_ERR_TIMEOUT, "timed out")                                                               \
    X(EDDY_ERR_CLOSED, "closed")                                                                   \
    X(EDDY_ERR_NOT_READY, "the bus has no live activation")                                        \
    X(EDDY_ERR_NOT_SUPPORTED, "not supported by this backend")                                     \
    X(EDDY_ERR_NO_DEADLINE, "a request needs a deadline")                                          \
    X(EDDY_ERR_NO_REPLY, "no reply before the deadline")                                           \
    X(EDDY_ERR_NO_RESPONDERS, "nothing is subscribed to the subject")                              \
    X(EDDY_ERR_RESPONDER_FAILED, "the responder failed")                                           \
    X(EDDY_ERR_RESERVED_ATTRIBUTE, "the event carries a reserved attribute")                       \
    X(EDDY_ERR_ILLEGAL_STATE, "illegal state")                                                     \
    X(EDDY_ERR_UNREADABLE_FILTER, "the filter needs a data field reader")                          \
    X(EDDY_ERR_VERSION_CONFLICT, "expected version does not match")                                \
    X(EDDY_ERR_HANDLER_FAILED, "the handler failed")                                               \
    X(EDDY_ERR_CANCELLED, "cancelled")                                                             \
    X(EDDY_ERR_UNAVAILABLE, "nothing can take the message now: held, not acknowledged")            \
    X(EDDY_ERR_NOT_FOUND, "not found")                                                             \
    X(EDDY_ERR_AUTH, "authentication failed")                                                      \
    X(EDDY_ERR_TLS, "TLS failed")                                                                  \
    X(EDDY_ERR_SERVER_FULL, "the server is out of memory: it refuses writes until memory frees")

#define AS_TEXT(sym, text) text,
#define AS_NAME(sym, text) #sym,
static const char *const texts[] = {STATUSES(AS_TEXT)};
static const char *const names[] = {STATUSES(AS_NAME)};
_Static_assert(sizeof(texts) / sizeof(texts[0]) == EDDY_STATUS_COUNT_, "status table");

const char *eddy_status_str(eddy_status st) {
    return (unsigned)st < EDDY_STATUS_COUNT_ ? texts[st] : "unknown status";
}

const char *eddy_status_name(eddy_status st) {
    return (unsigned)st < EDDY_STATUS_COUNT_ ? names[st] : "EDDY_UNKNOWN_STATUS";
}

eddy_status eddy__fail(eddy_error *err, eddy_status st, const char *fmt, ...) {
    if (err) {
        err->status = st;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->detail, sizeof(err->detail), fmt, ap);
        va_end(ap);
    }
    return st;
}

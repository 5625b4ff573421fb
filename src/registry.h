/* The namespace's registry of live subscriptions, so that a requester in any process can tell
 * "nothing is subscribed" (answered at once) from "subscribed, but nobody answers" (answered at
 * the deadline). A sorted set "{ns}:subs": one member per subscription of each live bus,
 * scored with the wall-clock time its lease ends. Buses renew their leases by heartbeat; a
 * process that dies stops renewing, and its members stop counting when their lease ends.
 * A pattern subscription counts for subjects that have no stream yet. */
#ifndef EDDY_SRC_REGISTRY_H
#define EDDY_SRC_REGISTRY_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "cmdlist.h"
#include "sub.h"

/* Appends ZADD of every subscription with lease end `until_ms`, and the removal of leases
 * that ended before now_ms. */
eddy_status eddy__registry_renew(const char *ns, eddy__sub *const *subs, size_t n,
                                 long long until_ms, long long now_ms, eddy__cmdlist *out, int tag);
/* Appends ZREM of every subscription (a bus that stops). */
eddy_status eddy__registry_remove(const char *ns, eddy__sub *const *subs, size_t n,
                                  eddy__cmdlist *out, int tag);
/* Appends the query for every live subscription. */
eddy_status eddy__registry_query(const char *ns, long long now_ms, eddy__cmdlist *out, int tag);
/* From the query's reply: does any live subscription's pattern match subject? A reply that
 * is not a list answers EDDY_ERR_PROTOCOL (or the server's error). */
eddy_status eddy__registry_matches(const redisReply *r, const char *subject, bool *any,
                                   eddy_error *err);

#endif

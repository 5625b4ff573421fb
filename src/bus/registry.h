/* SPDX-License-Identifier: BSD-3-Clause */
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

#include "bus/sub.h"
#include "util/cmdlist.h"

/* Appends ZADD of every subscription with lease end `until_ms`, and the removal of leases
 * that ended before now_ms. */
eddy_status eddy__registry_renew(const char *ns, eddy__sub *const *subs, size_t n,
                                 long long until_ms, long long now_ms, eddy__cmdlist *out, int tag);
/* Appends ZREM of every subscription (a bus that stops). */
eddy_status eddy__registry_remove(const char *ns, eddy__sub *const *subs, size_t n,
                                  eddy__cmdlist *out, int tag);
/* Appends the query for every live subscription. */
eddy_status eddy__registry_query(const char *ns, long long now_ms, eddy__cmdlist *out, int tag);
/* Appends the query for every live subscription with its lease's end (WITHSCORES: member,
 * score pairs), for tools that show the registry. */
eddy_status eddy__registry_list(const char *ns, long long now_ms, eddy__cmdlist *out, int tag);
/* One member's fields: kind ("r" responder, "h" handler, "g" gather twin), group, instance,
 * name, pattern, as pointers into m with their lengths. False when m is not a member eddy
 * wrote. */
bool eddy__registry_split_member(const char *m, size_t len, const char *out[5], size_t outlen[5]);
/* From the query's reply: does any live subscription's pattern match subject? A reply that
 * is not a list answers EDDY_ERR_PROTOCOL (or the server's error). */
eddy_status eddy__registry_matches(const redisReply *r, const char *subject, bool *any,
                                   eddy_error *err);

/* From the query's reply: for each responder of subs (this bus's, instance `self`), the live
 * responders of other buses (another instance) in another group whose patterns overlap its
 * pattern. fn(sub, other_group, other_instance, member, user) runs for each such pair. */
void eddy__registry_overlaps(const redisReply *r, eddy__sub *const *subs, size_t n,
                             const char *self,
                             void (*fn)(eddy__sub *sub, const char *group, const char *instance,
                                        const char *member, void *user),
                             void *user);

/* A requester's memory of the last registry answer. Only a positive answer is taken from it
 * (a subscription seen live keeps its lease for a while anyway); a negative one is always
 * asked again, so "no responders" is never answered from memory. When the answer grows old,
 * one request asks again while the others in flight keep using it (up to twice its age
 * limit), so a burst of requests sends one question, not one each. Thread: any. */
typedef struct eddy__registry_cache eddy__registry_cache;
/* How long a positive answer is remembered: short next to a lease, long next to a request. */
#define EDDY__REGISTRY_CACHE_MS 250
eddy__registry_cache *eddy__registry_cache_new(long long max_age_ms);
void eddy__registry_cache_free(eddy__registry_cache *c);
/* Remembers a query's reply (the cache takes it; a reply that is not a list is freed). */
void eddy__registry_cache_store(eddy__registry_cache *c, redisReply *r, long long now_ms);

/* A requester's question "is anything subscribed to subject?", as both front ends ask it.
 * *cached true: the cache answered yes. Otherwise the query was appended to out: send it and
 * give its reply to eddy__registry_answer. now_ms is wall-clock, taken before asking. */
eddy_status eddy__registry_ask(eddy__registry_cache *c, const char *ns, const char *subject,
                               long long now_ms, eddy__cmdlist *out, int tag, bool *cached);
/* The query's reply (taken: remembered when it is a good answer, else freed; may be NULL):
 * *any, or the reply's failure (EDDY_ERR_IO for NULL, the server's error, EDDY_ERR_PROTOCOL).
 * asked_ms is the now_ms given to eddy__registry_ask. */
eddy_status eddy__registry_answer(eddy__registry_cache *c, redisReply *reply, const char *subject,
                                  long long asked_ms, bool *any, eddy_error *err);
/* The same questions about one kind of member only (kind 'g': the gather twins, gather.h). */
eddy_status eddy__registry_ask_kind(eddy__registry_cache *c, const char *ns, const char *subject,
                                    char kind, long long now_ms, eddy__cmdlist *out, int tag,
                                    bool *cached);
eddy_status eddy__registry_answer_kind(eddy__registry_cache *c, redisReply *reply,
                                       const char *subject, char kind, long long asked_ms,
                                       bool *any, eddy_error *err);
/* A subscription's kind in the registry: 'r' responder, 'h' handler, 'g' gather twin. */
char eddy__registry_kind(const eddy__sub *sub);
/* The query got no reply (it could not be sent, or the connection was lost). */
void eddy__registry_unanswered(eddy__registry_cache *c);

#endif

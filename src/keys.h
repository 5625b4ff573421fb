/* SPDX-License-Identifier: BSD-3-Clause */
/* The Redis key layout. Every key of one namespace shares the hash tag "{ns}", so multi-key
 * commands and transactions stay legal on Redis Cluster.
 *   {ns}:s:<subject>    stream of messages published to one subject
 *   {ns}:all:<subject>  gather stream of one subject: its scatter-gather requests, read by a
 *                       fanout group per gather responder instance (gather.h)
 *   {ns}:subjects       set of every subject ever published or subscribed to (pattern discovery,
 *                       clean-up)
 *   {ns}:dlq:<group>    dead-letter stream of one group
 *   {ns}:inbox:<id>     reply stream of one bus activation (expires when its process dies)
 *   {ns}:subs           registry of live subscriptions (see registry.h)
 *   {ns}:es:all         event store, every event in global position order (id "<pos>-0")
 *   {ns}:es:s:<stream>  event store, one stream's events in version order (id "<ver>-0")
 *   {ns}:es:pos         event store, the last position handed out
 *   {ns}:ckpt:<feed>    a catch-up feed's marker
 *   {ns}:rm:<feed>:pos  a read model kept in Redis (eddy_feed_config.writes): the position its
 *                       last committed replay page reached (string)
 *   {ns}:rm:<feed>:ver  ... hash, stream id -> the last version of that stream committed
 *   {ns}:rm:<feed>:keys ... hash, each key of the model -> "hash" or "set"
 *   {ns}:rm:<feed>:k:<key>  ... one key of the model, named by its writes
 *   {ns}:retention      the lease of the process running the retention pass (retention.h)
 *   {ns}:pubids:<subject>  with publish_dedup_ms: hash, event id -> the entry id it was first
 *                       published to the subject as ("<entry id> <version>" from an append)
 *   {ns}:pubexp:<subject>  with publish_dedup_ms: zset, event id -> when it is forgotten (unix
 *                       ms, the server's clock); the functions prune it and the hash together,
 *                       and both keys expire a window after the subject's last dedup write.
 *                       One record per subject (not one key per publish), so a slot migration
 *                       moves a few keys and a publish never creates a key the source lacks
 * Builders return malloc'd strings (NULL on OOM) the caller frees. */
#ifndef EDDY_SRC_KEYS_H
#define EDDY_SRC_KEYS_H

#include <stdbool.h>

char *eddy__key_stream(const char *ns, const char *subject);
char *eddy__key_gather(const char *ns, const char *subject);
char *eddy__key_subjects(const char *ns);
char *eddy__key_dlq(const char *ns, const char *group);
/* {ns}:inbox:<id>: a bus activation's reply stream; with id "" the prefix every one shares. */
char *eddy__key_inbox(const char *ns, const char *id);
char *eddy__key_es_all(const char *ns);
char *eddy__key_es_pos(const char *ns);
char *eddy__key_es_stream(const char *ns, const char *stream_id);
char *eddy__key_checkpoint(const char *ns, const char *feed_id);
/* {ns}:rm:<feed>:<part>: a part of a read model kept in Redis ("pos", "ver", "keys", "k:<key>"). */
char *eddy__key_model(const char *ns, const char *feed_id, const char *part);
char *eddy__key_pubids(const char *ns, const char *subject);
char *eddy__key_pubexp(const char *ns, const char *subject);

/* A name that may stand inside a key (namespace, group, instance, subscription name, stream id,
 * feed id): 1 to 128 printable ASCII characters other than space, '{', '}' and ':'. */
bool eddy__key_name_ok(const char *s);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Finding the master of a handle's slot on a Redis Cluster (redis-cluster:// URLs), without I/O
 * waits of its own, as the link (and as sentinel.h does for a Sentinel's master).
 *
 * Every key of a namespace carries the hash tag "{ns}" (keys.h), so a handle only ever touches
 * one slot, CRC16(ns) % 16384: a cluster connection is a connection to that slot's master. A
 * round asks nodes in turn for CLUSTER SLOTS over a link of its own (AUTH with the URL's
 * credentials first, when set), until one names the slot's master: first the node a -MOVED
 * named (eddy__cluster_redirect), then the URL's seed nodes starting with `start`. The link then
 * connects there. Keyless commands (FUNCTION LOAD, CLIENT ID, WAIT) go to that master too.
 *
 * Redirects: a -MOVED, -TRYAGAIN, -CLUSTERDOWN or -UNBLOCKED reply fails the link
 * (eddy__link_reply) with EDDY_ERR_IO, and the next connect asks again, first of the node a
 * MOVED named, so a failover or a finished migration is followed on the next connect. What was
 * in flight fails as on any lost connection: reads are planned again, an acknowledgement not
 * made is a redelivery; a publish a MOVED refused is sent once more by the core
 * (eddy__publish_moved_again), since a MOVED means unwritten (eddy__cluster_moved).
 *
 * ASK (a slot being migrated, the key already moved): the link sends that one command once
 * more, behind ASKING, on a link of its own to the importing node, and hands its reply back in
 * place of the ASK (eddy__cluster_ask_start); the main connection waits meanwhile, and later
 * commands still go to the slot's owner. Not inside a MULTI (the server aborts the
 * transaction: the link fails, as for a MOVED). A blocking read sent that way blocks on the
 * importing node: a pause's cut (link.h's eddy__link_shutdown) waits for it.
 *
 * Rotation: when a round's master did not become READY, the next round starts with the seed
 * after the one that named it. Nothing is cached but a MOVED's address: every round asks.
 *
 * Thread: the link's. */
#ifndef EDDY_SRC_CLUSTER_H
#define EDDY_SRC_CLUSTER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/settings.h"
#include "util/refusal.h"

#define EDDY__CLUSTER_SLOTS 16384

typedef struct eddy__cluster eddy__cluster;

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), as the cluster specification's. */
uint16_t eddy__crc16(const char *buf, size_t len);
/* The slot of a key: CRC16 of its hash tag (between the first '{' and the next '}', when not
 * empty), or of the whole key, mod 16384. */
unsigned eddy__cluster_key_slot(const char *key, size_t len);
/* The slot every key of the namespace maps to. */
unsigned eddy__cluster_ns_slot(const char *ns);

/* s: a redis-cluster:// URL's settings, borrowed (they outlive the object). NULL on OOM. */
eddy__cluster *eddy__cluster_new(const eddy__settings *s);
void eddy__cluster_free(eddy__cluster *cl);
unsigned eddy__cluster_slot(const eddy__cluster *cl);

/* Starts a round that must end by `deadline` (the link's clock). EDDY_OK while a node is being
 * asked; otherwise no node could be asked, with the round's summary in err. */
eddy_status eddy__cluster_start(eddy__cluster *cl, long long deadline, eddy_error *err);
/* Ends the round's ask, if one is in progress (closes its socket). */
void eddy__cluster_stop(eddy__cluster *cl);
/* True while a node is being asked: the link then waits on eddy__cluster_fd/wants. */
bool eddy__cluster_asking(const eddy__cluster *cl);
int eddy__cluster_fd(const eddy__cluster *cl);
unsigned eddy__cluster_socket_id(const eddy__cluster *cl);
unsigned eddy__cluster_wants(const eddy__cluster *cl);

/* Steps the ask with what its socket is ready for (as eddy__link_io). EDDY_OK with *host set
 * (and *port) once a node named the slot's master (the strings live until the next round),
 * *host NULL while still asking; a failing node makes it ask the next one. Any other status:
 * none answered, with the summary in err (also logged). */
eddy_status eddy__cluster_io(eddy__cluster *cl, unsigned ready, const char **host, int *port,
                             eddy_error *err);
/* The master this round found is READY: the next round starts with the same seed. */
void eddy__cluster_ready(eddy__cluster *cl);

/* True for a reply that says the slot is not served here now (-MOVED, -ASK not followed,
 * -TRYAGAIN,
 * -CLUSTERDOWN, and -UNBLOCKED: a blocked read the node ended as it became a replica): err says
 * what (EDDY_ERR_IO; peer names the node), and a MOVED's address is asked first by the next round.
 */
bool eddy__cluster_redirect(eddy__cluster *cl, const redisReply *r, const char *peer,
                            eddy_error *err);
/* ---- following an ASK ------------------------------------------------------------------- */

/* True for an -ASK reply. */
bool eddy__cluster_is_ask(const redisReply *r);
/* Follows an -ASK (from peer) for the command whose RESP bytes are cmd[0, len): ASKING and
 * the command, once, on a link of its own to the node the ASK names; its replies are made with
 * the object functions of `like` (the main link's reader: a reply arena's, when installed).
 * EDDY_OK while under way: the link then waits on eddy__cluster_ask_fd/wants and steps it with
 * eddy__cluster_ask_io. */
eddy_status eddy__cluster_ask_start(eddy__cluster *cl, const redisReply *ask, const char *peer,
                                    const char *cmd, size_t len, const redisReader *like,
                                    eddy_error *err);
/* True while an ASK is being followed. */
bool eddy__cluster_following_ask(const eddy__cluster *cl);
int eddy__cluster_ask_fd(const eddy__cluster *cl);
unsigned eddy__cluster_ask_socket_id(const eddy__cluster *cl);
unsigned eddy__cluster_ask_wants(const eddy__cluster *cl);
/* Steps it: EDDY_OK with *reply the command's reply once it came (the detour is then over),
 * NULL while waiting; any other status: it failed (over too), with err's detail. */
eddy_status eddy__cluster_ask_io(eddy__cluster *cl, unsigned ready, redisReply **reply,
                                 eddy_error *err);
/* Ends a detour in progress, if any. */
void eddy__cluster_ask_stop(eddy__cluster *cl);

#endif

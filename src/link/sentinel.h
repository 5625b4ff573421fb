/* SPDX-License-Identifier: BSD-3-Clause */
/* Finding a Sentinel-watched master for a link (redis-sentinel:// URLs), without I/O waits of
 * its own, as the link: a round asks the URL's sentinels in turn, starting with `start`, for
 * SENTINEL get-master-addr-by-name <name> over a link of its own (AUTH with
 * settings.sentinel_password first, when set), until one answers with an address. The link
 * then connects there and checks ROLE in its handshake (eddy__sentinel_check_role).
 *
 * Rotation: when a round's master did not become READY (refused, not a master, handshake
 * refused), the next round starts with the sentinel after the one that named it, so that a
 * sentinel with a stale answer cannot hold every connect. Nothing is cached: every round asks.
 *
 * Following a switch: the ask is pipelined with SUBSCRIBE +switch-master
 * +failover-state-reconf-slaves +failover-state-wait-promotion on the same connection, so the
 * sentinel that named the master handles both in one pass (no announcement can fall between
 * them), and that connection stays open as one of the round's watches while the link is up;
 * once the master is READY, a subscribed connection to every other sentinel is opened too, since
 * a failover's leader may be any of them and only the leader announces its steps. The link
 * reads them without waiting whenever it steps (eddy__sentinel_watch: one poll() with no
 * timeout; the driver's existing waits drive it), and an announcement that the master moved
 * away from where the link is fails the link (EDDY_ERR_IO), which makes the driver connect
 * again, asking afresh. A watch that fails (its sentinel went away) is dropped with a debug
 * line: the others, READONLY, WAIT shortfalls and the ROLE check remain.
 *
 * Thread: the link's. */
#ifndef EDDY_SRC_SENTINEL_H
#define EDDY_SRC_SENTINEL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "config/settings.h"
#include "util/cmdlist.h"

typedef struct eddy__sentinel eddy__sentinel;

/* s: a redis-sentinel:// URL's settings, borrowed (they outlive the object). NULL on OOM. */
eddy__sentinel *eddy__sentinel_new(const eddy__settings *s);
void eddy__sentinel_free(eddy__sentinel *sn);

/* Starts a round that must end by `deadline` (the link's clock). EDDY_OK while a sentinel is
 * being asked; otherwise no sentinel could be asked, with the round's summary in err. */
eddy_status eddy__sentinel_start(eddy__sentinel *sn, long long deadline, eddy_error *err);
/* Ends the round's ask, if one is in progress (closes its socket). */
void eddy__sentinel_stop(eddy__sentinel *sn);
/* True while a sentinel is being asked: the link then waits on eddy__sentinel_fd/wants. */
bool eddy__sentinel_asking(const eddy__sentinel *sn);
int eddy__sentinel_fd(const eddy__sentinel *sn);
unsigned eddy__sentinel_socket_id(const eddy__sentinel *sn);
unsigned eddy__sentinel_wants(const eddy__sentinel *sn);

/* Steps the ask with what its socket is ready for (as eddy__link_io). EDDY_OK with *host set
 * (and *port) once a sentinel named the master (the strings live until the next round), *host
 * NULL while still asking; a failing sentinel makes it ask the next one. Any other status:
 * none answered, with the summary in err (also logged). */
eddy_status eddy__sentinel_io(eddy__sentinel *sn, unsigned ready, const char **host, int *port,
                              eddy_error *err);
/* The master this round found is READY: the next round starts with the same sentinel, and a
 * watch on every other sentinel is opened. */
void eddy__sentinel_ready(eddy__sentinel *sn);

/* Reads what the watches hold, without waiting (a poll() with no timeout, then the ready
 * ones). EDDY_OK when nothing says the master left host:port (the link's); EDDY_ERR_IO with
 * the detail when it did (eddy__sentinel_message). */
eddy_status eddy__sentinel_watch(eddy__sentinel *sn, const char *host, int port, eddy_error *err);
/* How many watches are open (connecting or subscribed). */
size_t eddy__sentinel_watching(const eddy__sentinel *sn);
/* True when every sentinel of the URL has a watch that is subscribed (READY). */
bool eddy__sentinel_watches_all(const eddy__sentinel *sn);

typedef enum eddy__sentinel_msg {
    EDDY__SENTINEL_MSG_NONE,      /* not about this master, or not an announcement */
    EDDY__SENTINEL_MSG_SWITCH,    /* +switch-master: host:port is the new master */
    EDDY__SENTINEL_MSG_LEAVING,   /* +failover-state-reconf-slaves: host:port is being replaced */
    EDDY__SENTINEL_MSG_PROMOTING, /* +failover-state-wait-promotion: the same, earlier */
} eddy__sentinel_msg;
/* What r (a reply read on a watch) announces for the master `name`, with the address in host
 * (NUL-terminated, hostsize bytes at most) and *port. The leader of a failover announces
 * wait-promotion as soon as it sent REPLICAOF NO ONE to the replica it chose: from then on
 * what the old master takes is lost, so the handle avoids it (eddy__conn_master_avoid) until
 * the sentinels name another; the leader names the promoted replica from reconf-slaves on
 * (once it saw it promoted, up to a second later), and announces +switch-master only once the
 * other replicas follow it, seconds later. */
eddy__sentinel_msg eddy__sentinel_message(const redisReply *r, const char *name, char *host,
                                          size_t hostsize, int *port);

/* Appends ROLE to a master's handshake. */
void eddy__sentinel_role_cmd(eddy__cmdlist *out);
/* EDDY_OK when ROLE's reply says master; EDDY_ERR_IO naming what peer is otherwise (the next
 * round asks again: a failover is under way), EDDY_ERR_BACKEND when ROLE was refused. */
eddy_status eddy__sentinel_check_role(const eddy__sentinel *sn, const redisReply *r,
                                      const char *peer, eddy_error *err);
/* True for a READONLY error reply: the master became a replica. */
bool eddy__sentinel_readonly(const redisReply *r);

#endif

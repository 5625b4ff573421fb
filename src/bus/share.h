/* SPDX-License-Identifier: BSD-3-Clause */
/* The members of a shared read connection, as one core both front ends drive (src/bus/wakeup.h
 * has the design; blocking/share.c and reactive/share.c wait and move the bytes): who reads on
 * it, who is due in the next shared round, who left it for a connection of its own while its
 * reads block (a hot stream, consumer.h) and came back, and whose command each reply still to
 * come answers. No I/O, no lock and no clock: the front end holds its lock around every call
 * and passes the time in.
 *
 * A member (eddy__share_member, kept in the front end's record) is always in one place:
 *   OFF     not attached;
 *   SHARED  attached, between rounds: the next shared round takes it once it is due (a kick:
 *           news, settled deliveries, a pause or a resume) or its wake_at has come;
 *   ROUND   a shared round has it (plans, sends, feeds): nobody else drives its consumer;
 *   OWN     it reads on a connection of its own (its plans block) until it gives itself back.
 * A member that is leaving is taken into no round again and cannot be given back.
 *
 * Replies come back in the order the commands went out: each command written on the shared
 * connection is recorded with its member (eddy__share_sent). A member that detaches leaves its
 * replies still due without an owner: they are dropped as they come, and the others' stay in
 * order. A lost connection answers none of them (eddy__share_lost).
 *
 * Thread: none of its own; the front end serialises every call on one share. */
#ifndef EDDY_SRC_BUS_SHARE_H
#define EDDY_SRC_BUS_SHARE_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"

typedef enum eddy__share_where {
    EDDY__SHARE_OFF,
    EDDY__SHARE_SHARED,
    EDDY__SHARE_ROUND,
    EDDY__SHARE_OWN
} eddy__share_where;

typedef struct eddy__share_member {
    void *who; /* the front end's record (borrowed) */
    eddy__share_where where;
    bool due, leaving;
    long long wake_at; /* SHARED: due at this time (monotonic ms) even without a kick */
    size_t idx;        /* in the share's members while attached */
} eddy__share_member;

typedef struct eddy__share {
    eddy__share_member **members;
    size_t n, cap;
    eddy__share_member **owners; /* a ring: owners[(head + i) % ocap] for i < len */
    size_t head, len, ocap;
    void **batch; /* eddy__share_take_due's answer */
    size_t batch_cap;
} eddy__share;

void eddy__share_init(eddy__share *s);
/* Frees what the share holds (the members are the front end's). */
void eddy__share_destroy(eddy__share *s);

/* m (for who) joins: SHARED, due at once, not leaving. Attaching a member attached already
 * changes nothing. EDDY_ERR_NOMEM (m stays OFF). */
eddy_status eddy__share_attach(eddy__share *s, eddy__share_member *m, void *who);
/* m leaves (attached or not); its replies still due are dropped as they come. True when it
 * was OWN (its own connection's driver then stops as it would anyway). The front end waits
 * out a round that has m first (eddy__share_member.where ROUND). */
bool eddy__share_detach(eddy__share *s, eddy__share_member *m);
/* Members attached. */
size_t eddy__share_members(const eddy__share *s);
/* The attached members' records (who) now, in a copy the caller frees, so that what telling
 * them does to the membership does not disturb the walk. NULL with *n 0 when there are none,
 * or on OOM (*n then stays 0 and the return is NULL while members remain). */
void **eddy__share_snapshot(const eddy__share *s, size_t *n);
/* The connection is gone: detaches and returns one attached member's record, NULL once none
 * is left (the front end tells each one it was lost). */
void *eddy__share_pop(eddy__share *s);

/* m plans again at once (news, settled deliveries, a pause or a resume). True when m waits
 * for a shared round, whose driver is then to be woken. */
bool eddy__share_kick(eddy__share_member *m);
/* The members due at now go into a round (each then ROUND), in *batch (the share's: valid
 * until the next call); *next_at is the earliest time another one is due (at most now +
 * idle_ms). When the batch cannot grow it takes as many as fit, and the others next time. */
size_t eddy__share_take_due(eddy__share *s, long long now, long long idle_ms, void ***batch,
                            long long *next_at);
/* The round that had m ended: m waits again, due at next_at (unless it is OWN now). */
void eddy__share_round_end(eddy__share_member *m, long long next_at);
/* The round that has m hands it to a connection of its own (its plan blocks): OWN. started
 * false (no connection or thread could be had) leaves it in the round. */
void eddy__share_own(eddy__share_member *m, bool started);
/* From m's own driver, whose plans idle until next_at: m waits for shared rounds again. False
 * (nothing changed) when m is leaving or not OWN: that driver stops. */
bool eddy__share_give_back(eddy__share_member *m, long long next_at);

/* One command of m's went out on the shared connection. False on OOM: the owners of the
 * replies to come would not be known, so the connection cannot be trusted any more. */
bool eddy__share_sent(eddy__share *s, eddy__share_member *m);
/* The last command eddy__share_sent recorded did not go out after all. */
void eddy__share_unsend(eddy__share *s);
/* A reply came: the record of the member whose command it answers; NULL when that member
 * detached since (the reply is dropped) or when none was due. */
void *eddy__share_answered(eddy__share *s);
/* The connection was closed: no reply is due any more. */
void eddy__share_lost(eddy__share *s);

#endif

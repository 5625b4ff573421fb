/* SPDX-License-Identifier: BSD-3-Clause */
/* What a subscription saw of one stream, to tell when the server is behind it: a restart from
 * an older snapshot, or a FLUSHALL, took back entries this process had read.
 *
 * The consumer looks at a stream (XINFO STREAM) whenever it creates the stream's group: when
 * it starts, after each reconnect and after the group was lost. Between looks it notes every
 * entry it reads live (">"). A look finds the server behind when
 *   - the stream's last-generated-id is below the newest id seen: the previous look's, or one
 *     read live since, or
 *   - its entries-added is below what it must be: the previous look's entries-added plus the
 *     entries read live since then with ids above that look's last-generated-id (each of those
 *     was added after that look, so each counts once).
 * The writes lost are that second difference (0 when only the id shows it). Entries that other
 * consumers of a competing group read are not seen here, so the count is a lower bound there;
 * for a fanout subscription, or a group with one consumer, it is exact as long as nothing was
 * added between the loss and the look.
 *
 * Thread: the subscription's reader only. */
#ifndef EDDY_SRC_STREAM_LOOK_H
#define EDDY_SRC_STREAM_LOOK_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct eddy__xid {
    uint64_t ms, seq;
} eddy__xid;

typedef struct eddy__stream_look {
    bool looked;         /* a previous look exists */
    eddy__xid look_id;   /* its last-generated-id */
    uint64_t look_added; /* its entries-added */
    uint64_t read_after; /* entries read live since, with ids above look_id */
    eddy__xid max_read;  /* the newest id seen: look_id, or one read live since */
} eddy__stream_look;

/* The entries one live read (">") returned from the stream: a checked entries array
 * (eddy__reply_entries), in ascending id order as Redis returns them. Per read, not per entry:
 * its first and last ids are enough, but right after a look. */
void eddy__stream_look_read(eddy__stream_look *l, const redisReply *entries);

/* What a look found. */
typedef struct eddy__stream_behind {
    bool behind;
    uint64_t lost;        /* writes lost (see above) */
    uint64_t expected;    /* entries-added it must have had */
    uint64_t added;       /* entries-added it has */
    char last_id[48];     /* its last-generated-id */
    char max_read_id[48]; /* the newest id seen */
} eddy__stream_behind;

/* Feeds an XINFO STREAM reply; false when it is not one (the look is skipped: the next one
 * compares with the previous). The look becomes the new baseline either way it finds. */
bool eddy__stream_look_feed(eddy__stream_look *l, const redisReply *info, eddy__stream_behind *out);

/* ---- published ids ---------------------------------------------------------------------
 *
 * What a bus's publishing side was told of its writes, to tell when the server is behind
 * them. After each publish round (the commands sent together: a publish, or a batch, both to
 * one subject) the ids the server acknowledged are noted as one run of its stream: the first
 * and last id and how many there were (XADD ids of one connection ascend; a deduplicated
 * publish, which answers an older id, only widens the run). The table is bounded: the
 * EDDY__PUB_LOOK_STREAMS streams published to most recently, each with its last
 * EDDY__PUB_LOOK_RUNS runs (older ones are forgotten).
 *
 * When the publishing connection was lost, each stream in the table is due a look: its next
 * round starts with XINFO STREAM, whose last-generated-id (the stream gone: 0-0) tells what
 * the server still has before this round's own writes. Only runs noted before the look was
 * taken (eddy__pub_look_take) are compared: a round acknowledged since may have run after it
 * on another thread, above the id the look returns. The server is behind when that id is
 * below the newest id of those runs; the writes lost counted then are their ids above it:
 * every id of a run whose first id is above it, and for a run it falls inside only its last
 * (the ids between are not kept: a lower bound then); runs already forgotten are not counted.
 * A stream deleted on purpose counts too. The runs found lost are dropped, so a loss counts
 * once.
 *
 * Thread: the caller locks (the publisher's lock). */

#define EDDY__PUB_LOOK_STREAMS 64
#define EDDY__PUB_LOOK_RUNS 16

typedef struct eddy__pub_run {
    eddy__xid first, last;
    uint64_t n;
    uint64_t noted; /* the table's clock when noted */
} eddy__pub_run;

typedef struct eddy__pub_stream {
    char *key;       /* the stream's key; NULL: a free row */
    uint64_t used;   /* the table's clock when last noted, to replace the least recent */
    uint64_t looked; /* the clock when its last look was taken: later runs are not compared */
    bool look_due;
    eddy__pub_run runs[EDDY__PUB_LOOK_RUNS]; /* a ring, oldest first */
    unsigned rhead, rn;
} eddy__pub_stream;

typedef struct eddy__pub_look {
    eddy__pub_stream rows[EDDY__PUB_LOOK_STREAMS];
    uint64_t clock;
    unsigned ndue; /* rows with look_due */
} eddy__pub_look;

void eddy__pub_look_free(eddy__pub_look *t);
/* A round's ids for one stream: n of them, first and last as the server wrote them. Not
 * noted on OOM, or when an id does not parse. */
void eddy__pub_look_note(eddy__pub_look *t, const char *key, size_t keylen, const char *first,
                         size_t firstlen, const char *last, size_t lastlen, uint64_t n);
/* The publishing connection was lost: every stream of the table is due a look. */
void eddy__pub_look_lost(eddy__pub_look *t);
/* Whether key is due a look; clears it (the caller sends it, or calls eddy__pub_look_again). */
bool eddy__pub_look_take(eddy__pub_look *t, const char *key);
void eddy__pub_look_again(eddy__pub_look *t, const char *key);
/* A look's reply for key: XINFO STREAM's, or an error reply (no such key: the stream is gone;
 * any other error skips the look). out->lost counts what is said above; out->last_id and
 * out->max_read_id (the newest id noted) name the ids for the log line. */
void eddy__pub_look_feed(eddy__pub_look *t, const char *key, const redisReply *info,
                         eddy__stream_behind *out);

#endif

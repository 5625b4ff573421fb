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

#endif

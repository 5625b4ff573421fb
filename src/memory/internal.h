/* SPDX-License-Identifier: BSD-3-Clause */
/* The memory engine's private model: the engine and connection structs, the per-command
 * context, the keyspace objects, streams and consumer groups, and the command handlers the
 * dispatcher calls. Private to src/memory/ (and its unit tests).
 *
 * Locking: everything reachable from an engine is guarded by engine->mu; command handlers run
 * with it held and never block. */
#ifndef EDDY_SRC_MEMORY_INTERNAL_H
#define EDDY_SRC_MEMORY_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memory/engine.h"
#include "memory/resp.h"
#include "memory/util.h"

/* ---- engine and connections --------------------------------------------------------------- */

struct eddy__mem_engine {
    /* registry.c; guarded by the registry's lock */
    char *name;
    unsigned refs;
    struct eddy__mem_engine *next;

    pthread_mutex_t mu; /* guards everything below */
    /* parked connections (eddy__mem_conn_park), each woken through its eventfd */
    struct eddy__mem_conn *conn_waiters;
    uint64_t other_seq;   /* seq of the last write that was not an XADD (wakes every waiter) */
    _Atomic uint64_t seq; /* write sequence: written under mu, read without it */
    uint64_t last_id_ms;  /* stream-id clock: wall-clock ms that never goes backwards */
    eddy__mdict keys;     /* key -> eddy__mobj* */
    eddy__mskl expires;   /* eddy__mobj* with a TTL, ordered by (expire_at, key) */
    /* function.c: the loaded function libraries' names; NULL before the first load */
    eddy__mdict *functions;
};

typedef struct eddy__mqueued {
    int argc;
    char **argv;
    size_t *argvlen;
} eddy__mqueued;

struct eddy__mem_conn {
    eddy__mem_engine *engine;
    bool in_multi;
    bool multi_failed; /* a queued command was rejected: EXEC answers EXECABORT */
    eddy__mqueued *queue;
    size_t nqueue, qcap;
    /* A blocking XREAD that found nothing: the command (flattened) and what its '$' ids meant,
     * so re-running it waits for entries after those ids, as one blocked Redis client would. */
    char *blocked_cmd;
    size_t blocked_len;
    struct eddy__mid *blocked_ids;
    int blocked_nids;
    eddy__mresp out;
    /* eddy__mem_conn_park: the keys the last blocked read waits on ((size_t length, bytes)
     * each; wait_nkeys < 0: unknown, any write wakes it), and the parked state (linked in
     * conn_waiters, woken through wake_fd), all under engine->mu */
    char *wait_keys;
    size_t wait_keys_cap;
    int wait_nkeys;
    bool parked, woken;
    int wake_fd;
    uint64_t blocked_seq; /* the write sequence when the last blocked read found nothing */
    struct eddy__mem_conn *wait_next, *wait_prev;
};

/* Engine-level hooks defined in engine.c and registry.c. */
eddy__mem_engine *eddy__mem_engine_new(const char *name);
void eddy__mem_engine_destroy(eddy__mem_engine *engine);
/* Checks the engine's internal invariants (tests). Returns NULL when sound, else a static
 * description of the first violation. Takes the lock. */
const char *eddy__mem_engine_check(eddy__mem_engine *engine);

/* ---- per-command context ------------------------------------------------------------------ */

typedef struct eddy__mctx {
    eddy__mem_engine *eng;
    eddy__mem_conn *conn;
    int argc;
    const char **argv;
    const size_t *argvlen;
    eddy__mresp *out;
    size_t mark;      /* where this command's reply starts in out */
    long long now_ms; /* unix ms, one snapshot per command (per EXEC inside MULTI) */
    bool in_exec;     /* inside MULTI/EXEC: BLOCK degrades to a non-blocking read */
    bool dirty;       /* data changed: bump the sequence, wake waiters */
    bool blocked;     /* a blocking read found nothing: no reply, the caller waits */
    long long block_ms;
    bool oom;
    /* set by XADD: the one stream this write added to, so only its waiters are woken; any
     * other write (or several) wakes every waiter */
    struct eddy__mobj *appended;
    bool other_write;
    /* the command's writes cannot serve a blocked read (deliveries, acknowledgements, claims):
     * they bump the sequence but wake no parked connection */
    bool quiet;
} eddy__mctx;

#define ARG(c, i) ((c)->argv[i])
#define ARGLEN(c, i) ((c)->argvlen[i])
#define ARGIS(c, i, word) eddy__marg_is((c)->argv[i], (c)->argvlen[i], (word))

/* Replaces whatever this command wrote with an error reply. */
void eddy__mctx_error(eddy__mctx *c, const char *text);
void eddy__mctx_errorf(eddy__mctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Out of memory: the command's reply is dropped and exec returns NULL with *block_ms = -1. */
void eddy__mctx_oom(eddy__mctx *c);
/* The reply writer failed or a handler reported OOM. */
static inline bool eddy__mctx_failed(const eddy__mctx *c) { return c->oom || c->out->oom; }

/* Common error replies, with Redis's texts. */
void eddy__mctx_err_syntax(eddy__mctx *c);
void eddy__mctx_err_wrongtype(eddy__mctx *c);
void eddy__mctx_err_notint(eddy__mctx *c);
void eddy__mctx_err_arity(eddy__mctx *c, const char *fullname);
/* Parses argv[i] as a long long, replying "value is not an integer or out of range" (or msg,
 * prefixed with "ERR ", when given) on failure. */
bool eddy__mctx_ll(eddy__mctx *c, int i, long long *out, const char *msg);

/* Prints a binary name into an error the way Redis's "%s" does: up to the first NUL. */
int eddy__mname_len(const char *s, size_t len);

/* ---- keyspace (keyspace.c) ---------------------------------------------------------------- */

typedef enum eddy__mtype {
    EDDY__MT_STRING,
    EDDY__MT_SET,
    EDDY__MT_HASH,
    EDDY__MT_ZSET,
    EDDY__MT_STREAM,
} eddy__mtype;

typedef struct eddy__mzset eddy__mzset;
typedef struct eddy__mstream eddy__mstream;

typedef struct eddy__mobj {
    eddy__mtype type;
    const char *key; /* the keyspace table's copy; valid while the key exists */
    size_t klen;
    long long expire_at; /* unix ms, -1 for none */
    union {
        struct {
            char *ptr;
            size_t len;
        } str;
        eddy__mdict set;  /* member -> NULL */
        eddy__mdict hash; /* field -> eddy__mblob* */
        eddy__mzset *zset;
        eddy__mstream *stream;
    } v;
} eddy__mobj;

/* A length-prefixed byte string (hash values). */
typedef struct eddy__mblob {
    size_t len;
    char data[];
} eddy__mblob;
eddy__mblob *eddy__mblob_new(const void *data, size_t len);

/* The live object at key, or NULL (expired keys are removed on the way). */
eddy__mobj *eddy__mkey_find(eddy__mctx *c, const char *key, size_t klen);
/* Like find, but an object of another type replies WRONGTYPE and sets *wrongtype. */
eddy__mobj *eddy__mkey_find_typed(eddy__mctx *c, const char *key, size_t klen, eddy__mtype type,
                                  bool *wrongtype);
/* Adds an empty object of the type under a key that does not exist. NULL on OOM. */
eddy__mobj *eddy__mkey_add(eddy__mctx *c, const char *key, size_t klen, eddy__mtype type);
void eddy__mkey_delete(eddy__mctx *c, eddy__mobj *o);
/* Frees the object's value and turns it into an empty string (SET over another type). */
void eddy__mkey_make_string(eddy__mobj *o);
/* Sets (at >= 0) or removes (at < 0) the key's expiry. -1 on OOM with nothing changed. */
int eddy__mkey_set_expire(eddy__mem_engine *eng, eddy__mobj *o, long long at);
/* Removes every key whose expiry time has passed. */
void eddy__mkey_expire_due(eddy__mctx *c);
/* Removes every key (FLUSHALL, engine teardown). */
void eddy__mkey_flush(eddy__mem_engine *eng);
int eddy__mkey_expire_cmp(const void *a, const void *b);

/* ---- streams (stream.c) ------------------------------------------------------------------- */

typedef struct eddy__mid {
    uint64_t ms, seq;
} eddy__mid;

static inline int eddy__mid_cmp(eddy__mid a, eddy__mid b) {
    if (a.ms != b.ms)
        return a.ms < b.ms ? -1 : 1;
    if (a.seq != b.seq)
        return a.seq < b.seq ? -1 : 1;
    return 0;
}
static inline bool eddy__mid_is_zero(eddy__mid a) { return a.ms == 0 && a.seq == 0; }
#define EDDY__MID_MAX ((eddy__mid){UINT64_MAX, UINT64_MAX})

/* A block that stream entries' bytes are carved from, so appending does not allocate per
 * entry. It is freed when its last entry goes (the stream's current block is reused instead);
 * a few live entries can keep a block alive, as a listpack node keeps its deleted entries. */
typedef struct eddy__mchunk {
    size_t used, cap;
    size_t live; /* entries whose bytes are in it */
    char data[];
} eddy__mchunk;

/* One stream entry. The field-value pairs are packed together: 2*nfields uint32 lengths, then
 * the bytes, inside chunk. */
typedef struct eddy__mentry {
    eddy__mid id;
    uint64_t node; /* serial of the emulated listpack node holding it */
    uint32_t nfields;
    bool deleted; /* tombstone: invisible to reads, still counted by its node */
    char *data;
    eddy__mchunk *chunk;
} eddy__mentry;

/* Redis stores a stream as a radix tree of listpack nodes (at most 100 entries or 4096 bytes
 * each) and "~" trimming only drops whole nodes. The engine keeps its entries in one array but
 * books them into emulated nodes with the same sizes, so approximate trimming removes exactly
 * what Redis would. */
typedef struct eddy__mnode {
    uint64_t serial;
    uint64_t live;  /* entries not deleted */
    uint64_t total; /* live + deleted */
    size_t bytes;   /* the listpack's size in Redis, computed from its encoding rules */
    eddy__mid master_id;
    eddy__mid last_id; /* last entry appended, deleted or not */
    uint32_t nmaster;  /* the master entry's field names (for the SAMEFIELDS encoding) */
    char *master;      /* nmaster uint32 lengths, then the bytes */
} eddy__mnode;

struct eddy__mstream {
    eddy__mentry *e; /* [head, n) in id order; entries[head] is live when length > 0 */
    size_t head, n, cap;
    size_t length;      /* live entries */
    size_t tombs;       /* deleted entries still in [head, n) */
    eddy__mnode *nodes; /* [nhead, nn) in serial order */
    size_t nhead, nn, ncap;
    uint64_t next_serial;
    eddy__mid last_id, first_id, max_deleted;
    uint64_t entries_added;
    eddy__mdict groups;  /* name -> eddy__mgroup* */
    uint64_t wseq;       /* engine seq of the last XADD to it */
    eddy__mchunk *chunk; /* where the next entry's bytes go; NULL before the first */
};

eddy__mstream *eddy__mstream_new(void);
void eddy__mstream_free(eddy__mstream *s);
/* Appends an entry with an id greater than last_id. fv holds 2*nfields arguments. -1 on OOM
 * with nothing changed. */
int eddy__mstream_append(eddy__mstream *s, eddy__mid id, int nfields, const char **fv,
                         const size_t *fvlen);
/* Gives back an entry's bytes (tombstones, trimming, undoing an append). */
void eddy__mstream_entry_release(eddy__mstream *s, eddy__mentry *e);
/* Position of the first entry (live or not) with id >= the given one, in [head, n]. */
size_t eddy__mstream_lower_bound(const eddy__mstream *s, eddy__mid id);
/* The live entry with this id, or NULL. */
eddy__mentry *eddy__mstream_get(eddy__mstream *s, eddy__mid id);
/* XDEL of one id: true if a live entry was deleted. */
bool eddy__mstream_delete(eddy__mstream *s, eddy__mid id);
/* Id of the last live entry; false when the stream is empty. */
bool eddy__mstream_last_live(const eddy__mstream *s, eddy__mid *out);

typedef enum { EDDY__TRIM_NONE, EDDY__TRIM_MAXLEN, EDDY__TRIM_MINID } eddy__mtrim_strategy;
typedef struct eddy__mtrim {
    eddy__mtrim_strategy strategy;
    long long maxlen;
    eddy__mid minid;
    bool approx;
    long long limit; /* 0: no limit */
} eddy__mtrim;
/* Redis's streamTrim: returns the number of entries removed. Never allocates. */
long long eddy__mstream_trim(eddy__mstream *s, const eddy__mtrim *t);

/* Writes [id, [field, value, ...]]. */
void eddy__mstream_reply_entry(eddy__mresp *out, const eddy__mentry *e);
/* Writes the live entries in [start, end] (count 0 = all), reversed for XREVRANGE, as an array.
 * Returns how many. */
size_t eddy__mstream_reply_range(eddy__mresp *out, eddy__mstream *s, eddy__mid start, eddy__mid end,
                                 size_t count, bool rev);

/* Stream ID parsing (Redis's streamGenericParseIDOrReply). strict rejects "-" and "+";
 * seq_given (may be NULL) enables the "ms-*" form and reports whether a sequence was given. */
bool eddy__mparse_id(const char *s, size_t len, eddy__mid *id, uint64_t missing_seq, bool strict,
                     bool *seq_given);
/* Parses argv[i] as an id, replying Redis's "Invalid stream ID" error on failure. */
bool eddy__mctx_id(eddy__mctx *c, int i, eddy__mid *id, uint64_t missing_seq, bool strict);
/* An interval bound: "(" makes it exclusive (then strict); replies on error. */
bool eddy__mctx_interval_id(eddy__mctx *c, int i, eddy__mid *id, bool *exclusive,
                            uint64_t missing_seq);
bool eddy__mid_incr(eddy__mid *id);
bool eddy__mid_decr(eddy__mid *id);
/* The stream type's lookup with WRONGTYPE handling. */
eddy__mobj *eddy__mstream_find(eddy__mctx *c, int keyarg, bool *wrongtype);

/* ---- consumer groups (group.c) ------------------------------------------------------------ */

typedef struct eddy__mconsumer eddy__mconsumer;

/* A pending entry, shared by the group's PEL and its owner's PEL. One allocation holds it and
 * its skip-list nodes in both (in_consumer is linked only while consumer is set), so
 * delivering, claiming and acknowledging allocate at most once per entry. */
typedef struct eddy__mnack {
    eddy__mid id;
    eddy__mconsumer *consumer;
    long long delivery_time;
    uint64_t delivery_count;
    eddy__mskl_node *in_group, *in_consumer;
    int consumer_height;
} eddy__mnack;

struct eddy__mconsumer {
    char *name;
    size_t nlen;
    long long seen_time;
    eddy__mskl pel; /* eddy__mnack* by id */
};

#define EDDY__ENTRIES_READ_INVALID (-1LL)

typedef struct eddy__mgroup {
    char *name;
    size_t nlen;
    eddy__mid last_id;
    long long entries_read;
    eddy__mskl pel;        /* eddy__mnack* by id */
    eddy__mdict consumers; /* name -> eddy__mconsumer* */
} eddy__mgroup;

eddy__mgroup *eddy__mgroup_new(const char *name, size_t nlen, eddy__mid last_id,
                               long long entries_read);
void eddy__mgroup_free(void *group);
/* Removes a consumer and its pending entries (from the group's PEL too). */
void eddy__mconsumer_delete(eddy__mgroup *g, eddy__mconsumer *consumer);
/* A new pending entry in the group's PEL, owned by no consumer yet (give it one with
 * eddy__mnack_transfer). NULL on OOM with nothing changed. */
eddy__mnack *eddy__mnack_add(eddy__mgroup *g, eddy__mid id, long long delivery_time,
                             uint64_t delivery_count);
/* Removes one pending entry from both PELs and frees it. */
void eddy__mnack_drop(eddy__mgroup *g, eddy__mnack *nack);
/* Moves a pending entry to another consumer (no-op if it already owns it); -1 on OOM with
 * nothing changed. */
int eddy__mnack_transfer(eddy__mnack *nack, eddy__mconsumer *to);
eddy__mnack *eddy__mgroup_pending(eddy__mgroup *g, eddy__mid id);
/* First pending entry with id >= start in a PEL. */
eddy__mskl_node *eddy__mpel_seek(eddy__mskl *pel, eddy__mid start);
eddy__mgroup *eddy__mgroup_find(eddy__mstream *s, const char *name, size_t nlen);
eddy__mconsumer *eddy__mconsumer_find(eddy__mgroup *g, const char *name, size_t nlen);
/* Finds or creates the consumer; NULL on OOM. *created (may be NULL) says which. */
eddy__mconsumer *eddy__mconsumer_get(eddy__mgroup *g, const char *name, size_t nlen, long long now,
                                     bool *created);
/* Records delivery of an entry to a consumer (XREADGROUP '>'): a new pending entry, or an
 * existing one reassigned with count 1. -1 on OOM with nothing changed. */
int eddy__mgroup_deliver(eddy__mgroup *g, eddy__mconsumer *c, eddy__mid id, long long now);
/* Advances last_id and entries_read after delivering id, as Redis does. */
void eddy__mgroup_advance(eddy__mstream *s, eddy__mgroup *g, eddy__mid id);
/* Redis's streamEstimateDistanceFromFirstEverEntry; EDDY__ENTRIES_READ_INVALID if unknown. */
long long eddy__mstream_estimate_read(const eddy__mstream *s, eddy__mid id);
bool eddy__mstream_has_tombstones_after(const eddy__mstream *s, eddy__mid start);
/* Writes a consumer's pending entries with id >= start (count 0 = all) as XREADGROUP's
 * history reply, counting each delivery. Returns how many. */
size_t eddy__mgroup_reply_history(eddy__mctx *c, eddy__mstream *s, eddy__mconsumer *consumer,
                                  eddy__mid start, size_t count);
/* Sorted views for replies that Redis orders by name (its radix trees). NULL on OOM; free
 * with eddy__mem_free. *n receives the count. */
eddy__mgroup **eddy__mstream_sorted_groups(eddy__mstream *s, size_t *n);
eddy__mconsumer **eddy__mgroup_sorted_consumers(eddy__mgroup *g, size_t *n);
long long eddy__mgroup_lag(const eddy__mstream *s, const eddy__mgroup *g, bool *valid);

/* ---- sorted sets (zset.c) ----------------------------------------------------------------- */

eddy__mzset *eddy__mzset_new(void);
void eddy__mzset_free(eddy__mzset *z);
size_t eddy__mzset_card(const eddy__mzset *z);
/* For native functions (function.h): adds or rescores a member (-1 on OOM, nothing changed);
 * a member's score; removes a member; removes up to `limit` members of score <= max, lowest
 * first, calling `each` with each before it goes. The caller deletes a key left empty. */
int eddy__mzset_put(eddy__mzset *z, double score, const char *member, size_t len);
bool eddy__mzset_score(const eddy__mzset *z, const char *member, size_t len, double *out);
bool eddy__mzset_remove(eddy__mzset *z, const char *member, size_t len);
size_t eddy__mzset_pop_upto(eddy__mzset *z, double max, size_t limit,
                            void (*each)(const char *member, size_t len, void *user), void *user);

/* ---- command handlers --------------------------------------------------------------------- */

typedef void (*eddy__mcmd_fn)(eddy__mctx *c);

/* keyspace.c */
void eddy__mcmd_ping(eddy__mctx *c);
void eddy__mcmd_time(eddy__mctx *c);
void eddy__mcmd_del(eddy__mctx *c);
void eddy__mcmd_exists(eddy__mctx *c);
void eddy__mcmd_type(eddy__mctx *c);
void eddy__mcmd_expire(eddy__mctx *c);
void eddy__mcmd_pexpire(eddy__mctx *c);
void eddy__mcmd_ttl(eddy__mctx *c);
void eddy__mcmd_pttl(eddy__mctx *c);
void eddy__mcmd_persist(eddy__mctx *c);
void eddy__mcmd_flushall(eddy__mctx *c);
/* string.c */
void eddy__mcmd_get(eddy__mctx *c);
void eddy__mcmd_set(eddy__mctx *c);
void eddy__mcmd_incr(eddy__mctx *c);
void eddy__mcmd_incrby(eddy__mctx *c);
/* set.c */
void eddy__mcmd_sadd(eddy__mctx *c);
void eddy__mcmd_srem(eddy__mctx *c);
void eddy__mcmd_smembers(eddy__mctx *c);
void eddy__mcmd_sismember(eddy__mctx *c);
void eddy__mcmd_scard(eddy__mctx *c);
/* hash.c */
void eddy__mcmd_hset(eddy__mctx *c);
void eddy__mcmd_hget(eddy__mctx *c);
void eddy__mcmd_hdel(eddy__mctx *c);
void eddy__mcmd_hgetall(eddy__mctx *c);
void eddy__mcmd_hlen(eddy__mctx *c);
/* zset.c */
void eddy__mcmd_zadd(eddy__mctx *c);
void eddy__mcmd_zrem(eddy__mctx *c);
void eddy__mcmd_zrangebyscore(eddy__mctx *c);
void eddy__mcmd_zremrangebyscore(eddy__mctx *c);
void eddy__mcmd_zscore(eddy__mctx *c);
void eddy__mcmd_zcard(eddy__mctx *c);
/* xcmd.c */
void eddy__mcmd_xadd(eddy__mctx *c);
void eddy__mcmd_xlen(eddy__mctx *c);
void eddy__mcmd_xrange(eddy__mctx *c);
void eddy__mcmd_xrevrange(eddy__mctx *c);
void eddy__mcmd_xdel(eddy__mctx *c);
void eddy__mcmd_xtrim(eddy__mctx *c);
/* xread.c */
void eddy__mcmd_xread(eddy__mctx *c);
void eddy__mcmd_xreadgroup(eddy__mctx *c);
/* xgroup.c */
void eddy__mcmd_xgroup_create(eddy__mctx *c);
void eddy__mcmd_xgroup_setid(eddy__mctx *c);
void eddy__mcmd_xgroup_destroy(eddy__mctx *c);
void eddy__mcmd_xgroup_createconsumer(eddy__mctx *c);
void eddy__mcmd_xgroup_delconsumer(eddy__mctx *c);
void eddy__mcmd_xgroup_help(eddy__mctx *c);
/* xpel.c */
void eddy__mcmd_xack(eddy__mctx *c);
void eddy__mcmd_xpending(eddy__mctx *c);
void eddy__mcmd_xclaim(eddy__mctx *c);
void eddy__mcmd_xautoclaim(eddy__mctx *c);
/* xinfo.c */
void eddy__mcmd_xinfo_stream(eddy__mctx *c);
void eddy__mcmd_xinfo_groups(eddy__mctx *c);
void eddy__mcmd_xinfo_consumers(eddy__mctx *c);
void eddy__mcmd_xinfo_help(eddy__mctx *c);

/* Helpers for the blocked-XREAD bookkeeping (engine.c). */
/* True when this command is the connection's blocked XREAD run again; then *ids holds what its
 * '$' arguments resolved to the first time. */
bool eddy__mconn_blocked_match(eddy__mctx *c, const eddy__mid **ids, int *nids);
/* Remembers this command as blocked with the given resolved ids; false on OOM. */
bool eddy__mconn_block(eddy__mctx *c, const eddy__mid *ids, int nids);
/* Records the keys a blocked read waits on (argv[first], nkeys of them) for
 * eddy__mem_conn_park; without memory for them, any write will wake it. */
void eddy__mconn_wait_on(eddy__mctx *c, int first, int nkeys);
void eddy__mconn_unblock(eddy__mem_conn *conn);

#endif

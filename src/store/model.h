/* SPDX-License-Identifier: BSD-3-Clause */
/* A read model kept in Redis (eddy_feed_config.writes, include/eddy/model.h), for both front
 * ends: the write sets a feed gathers, the one function call that commits them with the model's
 * progress, and the reads of the model. The front ends call the user's writes callback through
 * eddy__model_gather, send what eddy__model_commit_cmd builds and hand back the reply; they
 * decide nothing.
 *
 * The rules, decided here once:
 * - An event needs its store metadata (stream id, version, position): one without is refused.
 * - A batch is one event (a live or held event) or a replay page's events (`page`: the
 *   commit also moves the model's position to the last one). An event whose writes callback
 *   failed is not in the batch; the ones before it stay.
 * - The commit is idempotent (each event's version is checked against the committed one), so
 *   a front end sends it again after a lost connection, as a read, and after a lost library
 *   behind a load (store_op.h). */
#ifndef EDDY_SRC_STORE_MODEL_H
#define EDDY_SRC_STORE_MODEL_H

#include <hiredis/hiredis.h>
#include <stdbool.h>

#include "eddy/writes.h"
#include "util/cmd.h"
#include "util/cmdlist.h"

typedef struct eddy__model eddy__model;

/* ns: the namespace; feed_id names the model (checked by the feed). NULL on OOM. */
eddy__model *eddy__model_new(const char *ns, const char *feed_id, eddy_feed_writes_fn writes,
                             void *user);
void eddy__model_free(eddy__model *m);

/* ---- write sets -------------------------------------------------------------------------- */

struct eddy_writes {
    const eddy__model *m;
    eddy__cmd keys;   /* the model keys the batch names, each once (full names) */
    eddy__cmd args;   /* the events' arguments, as the function takes them */
    eddy__cmd ev;     /* the writes of the event being gathered */
    unsigned nwrites; /* ... how many */
    unsigned events;  /* events in args */
    long long last;   /* the last event's position */
    bool failed;      /* a write ran out of memory */
};

void eddy__writes_init(eddy_writes *w, const eddy__model *m);
/* Empties the batch for the next one (keeps its memory). */
void eddy__writes_clear(eddy_writes *w);
void eddy__writes_reset(eddy_writes *w);

/* Asks the model's writes callback for the write set of one event and adds it to w: EDDY_OK,
 * or the refusal (no metadata, the callback's failure with its detail, out of memory), after
 * which w holds what it held before. */
eddy_status eddy__model_gather(const eddy__model *m, eddy_writes *w, void *event,
                               const eddy_event_meta *meta, eddy_error *err);

/* The FCALL that commits w (w->events > 0); page: a replay page's. */
eddy_status eddy__model_commit_cmd(const eddy__model *m, const eddy_writes *w, bool page,
                                   eddy__cmdlist *out, eddy_error *err);
/* The commit's reply (after eddy__store_op_call_result): EDDY_OK with *applied (may be NULL)
 * the number of events that changed the model. */
eddy_status eddy__model_commit_result(const redisReply *r, long long *applied, eddy_error *err);

/* ---- reads ------------------------------------------------------------------------------- */

typedef enum eddy__model_read {
    EDDY__MODEL_POSITION, /* GET of the position */
    EDDY__MODEL_HASH,     /* HGETALL of a key */
    EDDY__MODEL_SET,      /* SMEMBERS of a key */
    EDDY__MODEL_KEYS      /* HGETALL of the registry */
} eddy__model_read;

/* The read's command; key names the model key (HASH, SET; else ignored). The feed id and the
 * key are checked (EDDY_ERR_INVALID_ARGUMENT). */
eddy_status eddy__model_read_cmd(const char *ns, const char *feed_id, eddy__model_read what,
                                 const char *key, eddy__cmdlist *out, eddy_error *err);
/* The position read's reply. */
eddy_status eddy__model_position_result(const redisReply *r, long long *position, eddy_error *err);
/* HASH, SET, KEYS: hands each item to each (see eddy_model_item_fn); KEYS strips the prefix
 * of the feed's model keys from each name. */
eddy_status eddy__model_items_result(const char *ns, const char *feed_id, eddy__model_read what,
                                     const redisReply *r, eddy_model_item_fn each, void *user,
                                     eddy_error *err);

/* A read of a model with what its reply means, for both front ends' calls through the store:
 * the reply goes to eddy__model_reading_result, which keeps the position or hands the items to
 * each. */
typedef struct eddy__model_reading {
    const char *ns; /* borrowed; lives as the store */
    char feed_id[129];
    eddy__model_read what;
    eddy_model_item_fn each; /* HASH, SET, KEYS; user is its user */
    void *user;
    long long position; /* POSITION's, once read */
} eddy__model_reading;

/* Fills *rd and builds its command (eddy__model_read_cmd's checks). */
eddy_status eddy__model_reading_cmd(eddy__model_reading *rd, const char *ns, const char *feed_id,
                                    eddy__model_read what, const char *key, eddy_model_item_fn each,
                                    void *user, eddy__cmdlist *out, eddy_error *err);
/* A reading's reply (user: the eddy__model_reading). */
eddy_status eddy__model_reading_result(const redisReply *r, void *user, eddy_error *err);
/* A commit's reply, the applied count dropped (user unused). */
eddy_status eddy__model_committed(const redisReply *r, void *user, eddy_error *err);

#endif

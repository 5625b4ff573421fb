/* SPDX-License-Identifier: BSD-3-Clause */
/* A dead-letter replay as a step machine; see replay_flow.h. */
#include "bus/replay_flow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/dlq.h"
#include "error.h"
#include "log.h"

#define REPLAY_PAGE 64
#define REPLAY_CMDS 5 /* eddy__dlq_replay_cmds: MULTI, XADD, SADD, XDEL, EXEC */

typedef enum phase { GET, NEWEST, PAGE, REPLAY, RESTORE, DONE } phase;

struct eddy__replay_flow {
    const eddy__settings *s;
    char *group;
    bool one; /* one dead letter (id), or all of them */
    char *id;
    phase at; /* what the next plan sends, and then what its round was */
    bool failed;
    eddy_status st; /* the first failure, with its detail */
    eddy_error err;
    size_t replayed;
    char entry_id[EDDY_DLQ_ID_SIZE];  /* a replay of one: the new entry */
    char last[EDDY_DLQ_ID_SIZE];      /* replay all: the newest when it began */
    char after[EDDY_DLQ_ID_SIZE];     /* and the last one read */
    bool last_page;                   /* the page in hand is the last */
    eddy_dead_letter *v[REPLAY_PAGE]; /* the dead letters of the round */
    size_t n;
    bool restore[REPLAY_PAGE];         /* replayed, refused, deleted: to be written back */
    size_t which[REPLAY_PAGE], nwhich; /* the write-backs of the round, by index in v */
    size_t skipped;                    /* left in place: not replayable */
    char first_skipped[EDDY_DLQ_ID_SIZE];
    eddy_error skip_err;
};

static void fail(eddy__replay_flow *f, eddy_status st, const eddy_error *err) {
    if (f->failed)
        return;
    f->failed = true;
    f->st = st;
    if (err)
        f->err = *err;
    else
        eddy__fail(&f->err, st, "%s", eddy_status_str(st));
}

static void drop_page(eddy__replay_flow *f) {
    for (size_t i = 0; i < f->n; i++)
        eddy_dead_letter_free(f->v[i]);
    f->n = 0;
}

eddy_status eddy__replay_flow_new(const eddy__settings *s, const char *group, bool one,
                                  const char *id, eddy__replay_flow **out, eddy_error *err) {
    *out = NULL;
    eddy__replay_flow *f = calloc(1, sizeof(*f));
    if (!f || (group && !(f->group = strdup(group))) || (id && !(f->id = strdup(id)))) {
        eddy__replay_flow_free(f);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory");
    }
    f->s = s;
    f->one = one;
    f->at = one ? GET : NEWEST;
    *out = f;
    return EDDY_OK;
}

void eddy__replay_flow_free(eddy__replay_flow *f) {
    if (!f)
        return;
    drop_page(f);
    free(f->group);
    free(f->id);
    free(f);
}

/* After a page's transactions (and their write-backs): the next page, unless this was the
 * last, a replay of one, or something failed. */
static void next_page(eddy__replay_flow *f) {
    drop_page(f);
    f->at = f->failed || f->last_page || f->one ? DONE : PAGE;
}

/* The write-backs of the round's refused transactions; none (all out of memory, logged as
 * lost): on to the next page. */
static void plan_restore(eddy__replay_flow *f, eddy__cmdlist *cmds) {
    f->nwhich = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (!f->restore[i])
            continue;
        if (eddy__dlq_restore_cmd(f->s, f->group, f->v[i], cmds, NULL) == EDDY_OK)
            f->which[f->nwhich++] = i;
        else
            eddy__log(&f->s->log, EDDY_LOG_ERROR,
                      "dead letters: replay of %s of group '%s' refused by the server and its "
                      "write-back could not be built (out of memory): the message is lost",
                      eddy_dead_letter_id(f->v[i]), f->group);
    }
    if (f->nwhich == 0)
        next_page(f);
}

void eddy__replay_flow_plan(eddy__replay_flow *f, eddy__cmdlist *cmds, bool *idempotent) {
    eddy__cmdlist_reset(cmds);
    *idempotent = f->at == GET || f->at == NEWEST || f->at == PAGE;
    eddy_error e;
    eddy_status st = EDDY_OK;
    switch (f->at) {
    case GET:
        st = eddy__dlq_get_cmd(f->s, f->group, f->id, cmds, &e);
        break;
    case NEWEST:
        st = eddy__dlq_last_cmd(f->s, f->group, cmds, &e);
        break;
    case PAGE:
        st = eddy__dlq_range_cmd(f->s, f->group, f->after, f->last, REPLAY_PAGE, cmds, &e);
        break;
    case REPLAY:
        for (size_t i = 0; i < f->n && st == EDDY_OK; i++)
            st = eddy__dlq_replay_cmds(f->s, f->group, f->v[i], cmds, &e);
        break;
    case RESTORE:
        plan_restore(f, cmds);
        if (f->at != RESTORE) /* nothing to write back after all */
            eddy__replay_flow_plan(f, cmds, idempotent);
        return;
    case DONE:
        return;
    }
    if (st != EDDY_OK) { /* nothing of it is sent */
        eddy__cmdlist_reset(cmds);
        fail(f, st, &e);
        drop_page(f);
        f->at = DONE;
    }
}

static eddy_status keep_one(eddy_dead_letter *dl, void *user) {
    eddy__replay_flow *f = user;
    if (f->n == REPLAY_PAGE) {
        eddy_dead_letter_free(dl);
        return EDDY_ERR_PROTOCOL; /* more than the COUNT asked for */
    }
    f->v[f->n++] = dl;
    return EDDY_OK;
}

/* A read's reply into f->v (after: its last id, may be NULL). */
static eddy_status read_entries(eddy__replay_flow *f, const redisReply *r, char *after,
                                eddy_error *err) {
    eddy_status st = eddy__dlq_entries(f->s, r, keep_one, f, NULL, after, err);
    if (st == EDDY_ERR_PROTOCOL && f->n == REPLAY_PAGE)
        eddy__fail(err, st, "dead letters: the server sent more entries than asked for");
    return st;
}

/* Those that name no valid subject stay where they are (counted); the rest go on. */
static void leave_unreplayable(eddy__replay_flow *f) {
    size_t k = 0;
    for (size_t i = 0; i < f->n; i++) {
        eddy_error why;
        if (eddy__dlq_replayable(f->group, f->v[i], &why) == EDDY_OK) {
            f->v[k++] = f->v[i];
            continue;
        }
        if (f->skipped++ == 0) {
            snprintf(f->first_skipped, sizeof(f->first_skipped), "%s", f->v[i]->id);
            f->skip_err = why;
        }
        eddy_dead_letter_free(f->v[i]);
    }
    f->n = k;
}

static void fed_read(eddy__replay_flow *f, redisReply **replies) {
    eddy_error e;
    eddy_status st;
    switch (f->at) {
    case GET:
        if ((st = eddy__dlq_one(f->s, replies[0], f->group, f->id, &f->v[0], &e)) == EDDY_OK)
            f->n = 1;
        f->at = REPLAY;
        break;
    case NEWEST:
        st = read_entries(f, replies[0], f->last, &e);
        drop_page(f);
        f->at = f->last[0] ? PAGE : DONE; /* none: nothing to replay */
        break;
    default: /* PAGE */
        if ((st = read_entries(f, replies[0], f->after, &e)) != EDDY_OK)
            break;
        f->last_page = f->n < REPLAY_PAGE || strcmp(f->after, f->last) == 0;
        leave_unreplayable(f);
        if (f->n > 0)
            f->at = REPLAY;
        else
            next_page(f);
        break;
    }
    if (st != EDDY_OK) {
        fail(f, st, &e);
        drop_page(f);
        f->at = DONE;
    }
}

static void fed_replay(eddy__replay_flow *f, redisReply **replies) {
    bool any = false;
    for (size_t i = 0; i < f->n; i++) {
        eddy_error one;
        f->restore[i] = false;
        eddy_status st = eddy__dlq_replay_result(f->s, f->group, f->v[i], replies + REPLAY_CMDS * i,
                                                 f->one ? f->entry_id : NULL, sizeof(f->entry_id),
                                                 &f->restore[i], &one);
        any |= f->restore[i];
        if (st == EDDY_OK)
            f->replayed++;
        else
            fail(f, st, &one); /* the first failure; the others' outcomes are still read */
    }
    if (any)
        f->at = RESTORE;
    else
        next_page(f);
}

static void fed_restore(eddy__replay_flow *f, eddy_status st, redisReply **replies,
                        const eddy_error *err) {
    for (size_t j = 0; j < f->nwhich; j++) {
        eddy_error why = {0};
        eddy_status rst = st == EDDY_OK ? eddy__dlq_restore_result(replies[j], &why) : st;
        if (st != EDDY_OK && err)
            why = *err;
        const char *id = eddy_dead_letter_id(f->v[f->which[j]]);
        if (rst == EDDY_OK)
            eddy__log(&f->s->log, EDDY_LOG_WARN,
                      "dead letters: replay of %s of group '%s' refused by the server; the dead "
                      "letter was written back under a new id",
                      id, f->group);
        else
            eddy__log(&f->s->log, EDDY_LOG_ERROR,
                      "dead letters: replay of %s of group '%s' refused by the server and its "
                      "write-back failed (%s): the message is lost",
                      id, f->group, why.detail);
        if (j == 0) { /* the status is a refusal: say what became of the first */
            size_t len = strlen(f->err.detail);
            snprintf(f->err.detail + len, sizeof(f->err.detail) - len, "; %s",
                     rst == EDDY_OK ? "the dead letter was written back under a new id"
                                    : "writing the dead letter back failed too");
        }
    }
    next_page(f);
}

void eddy__replay_flow_feed(eddy__replay_flow *f, eddy_status st, redisReply **replies,
                            const eddy_error *err) {
    if (f->at == RESTORE) {
        fed_restore(f, st, replies, err);
        return;
    }
    if (st != EDDY_OK) {
        fail(f, st, err);
        drop_page(f);
        f->at = DONE;
        return;
    }
    if (f->at == REPLAY)
        fed_replay(f, replies);
    else if (f->at != DONE)
        fed_read(f, replies);
}

eddy_status eddy__replay_flow_result(const eddy__replay_flow *f, size_t *replayed, char *entry_id,
                                     size_t entry_id_size, eddy_error *err) {
    if (replayed)
        *replayed = f->replayed;
    if (f->failed) {
        if (err)
            *err = f->err;
        return f->st;
    }
    if (f->skipped)
        return eddy__fail(err, EDDY_ERR_MALFORMED,
                          "%zu dead letter(s) of group '%s' could not be replayed and are left in "
                          "place; the first, %s: %s",
                          f->skipped, f->group, f->first_skipped, f->skip_err.detail);
    if (entry_id && entry_id_size)
        snprintf(entry_id, entry_id_size, "%s", f->entry_id);
    return EDDY_OK;
}

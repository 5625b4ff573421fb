/* The blocking bus's private structures, shared by its files (bus.c, publish.c, reader.c). */
#ifndef EDDY_BLOCKING_INTERNAL_H
#define EDDY_BLOCKING_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "conn.h"
#include "consumer.h"
#include "eddy/blocking.h"
#include "pool.h"
#include "publisher.h"
#include "settings.h"
#include "sub.h"

/* One subscription and its reader thread. */
typedef struct bsub {
    eddy_bus *bus;
    eddy__sub *sub;
    eddy__consumer *consumer; /* one per activation */
    bconn conn;               /* the reader's own connection: blocking reads tie it up */
    pthread_t thread;
    bool running;
    atomic_bool stopping;
    pthread_mutex_t lock; /* with `settled`: the reader waits for its batch's handlers, and
                             start waits for `ready` */
    pthread_cond_t settled;
    bool ready;
} bsub;

struct eddy_bus {
    eddy__settings s;
    eddy__publisher *publisher;
    pthread_mutex_t pub_lock; /* one publish (pipeline) at a time on pub_conn */
    bconn pub_conn;
    pthread_mutex_t lock; /* subs, nsubs, started */
    bsub **subs;
    size_t nsubs;
    bool started;
    bpool *pool;
};

/* reader.c */
eddy_status bsub_start(bsub *bs, eddy_error *err);
/* Waits until the reader is ready (see eddy__consumer_ready); EDDY_ERR_IO after the timeout. */
eddy_status bsub_wait_ready(bsub *bs, eddy_error *err);
void bsub_stop(bsub *bs);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* A program written against eddy 0.2's names (tests/twins/deprecated.sh compiles it): every
 * name eddy/deprecated.h keeps, used once. It must compile, and each use must warn. */
#include "eddy/rdomain.h"
#include "eddy/rpush.h"

int old_names(void);

int old_names(void) {
    eddy_feed_cancel *c = eddy_feed_cancel_new();
    eddy_feed_cancel_fire(c);
    int fired = eddy_feed_cancel_fired(c);
    eddy_feed_cancel_free(c);
    eddy_feed_info info;
    long long next = 0;
    eddy_rstore_ckpt_read_fn read_fn = NULL;
    (void)read_fn;
    (void)eddy_store_read_all(NULL, 0, 1, NULL, NULL, NULL, &next, NULL);
    (void)eddy_feed_get_info(NULL, &info);
    (void)eddy_domain_get_info(NULL, &info);
    (void)eddy_push_sources_status(NULL, "x", NULL);
    (void)eddy_rstore_ckpt_exists(NULL, "x", NULL, NULL, NULL);
    (void)eddy_rstore_ckpt_read(NULL, "x", NULL, NULL, NULL);
    (void)eddy_rstore_ckpt_save(NULL, "x", "1", NULL, NULL, NULL);
    (void)eddy_rstore_ckpt_remove(NULL, "x", NULL, NULL, NULL);
    (void)eddy_rfeed_store_checkpoints(NULL);
    (void)eddy_rfeed_get_info(NULL, &info);
    (void)eddy_rdomain_get_info(NULL, &info);
    (void)eddy_rpush_sources_status(NULL, "x", NULL);
    return fired;
}

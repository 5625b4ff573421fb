/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the names 0.3.0 replaced in the reactive headers, kept for one release (removed in
 * 0.4.0), as eddy/deprecated.h does for the blocking ones (see there). Each old name still links
 * (libeddy_reactive, the same symbol as in 0.2) and still compiles, with a deprecation warning
 * naming its replacement.
 *
 * Not included on its own: each reactive header includes it at its end, after defining the
 * section it wants (EDDY_DEPRECATED_<HEADER>_H).
 */
#ifdef __cplusplus
extern "C" {
#endif

/* ---- eddy/rstore.h ----------------------------------------------------------------------- */
#if defined(EDDY_DEPRECATED_RSTORE_H) && !defined(EDDY_DEPRECATED_RSTORE_H_DONE)
#define EDDY_DEPRECATED_RSTORE_H_DONE
/** Deprecated in 0.3.0: eddy_rstore_checkpoint_read_fn. */
typedef eddy_rstore_checkpoint_read_fn
    eddy_rstore_ckpt_read_fn EDDY_DEPRECATED("use eddy_rstore_checkpoint_read_fn");
/** Deprecated in 0.3.0: eddy_rstore_checkpoint_exists (the same call). */
EDDY_DEPRECATED("use eddy_rstore_checkpoint_exists")
EDDY_EXPORT eddy_status eddy_rstore_ckpt_exists(eddy_rstore *store, const char *feed_id,
                                                eddy_rstore_exists_fn done, void *user,
                                                eddy_error *err);
/** Deprecated in 0.3.0: eddy_rstore_checkpoint_read (the same call). */
EDDY_DEPRECATED("use eddy_rstore_checkpoint_read")
EDDY_EXPORT eddy_status eddy_rstore_ckpt_read(eddy_rstore *store, const char *feed_id,
                                              eddy_rstore_checkpoint_read_fn done, void *user,
                                              eddy_error *err);
/** Deprecated in 0.3.0: eddy_rstore_checkpoint_save (the same call). */
EDDY_DEPRECATED("use eddy_rstore_checkpoint_save")
EDDY_EXPORT eddy_status eddy_rstore_ckpt_save(eddy_rstore *store, const char *feed_id,
                                              const char *value, eddy_rstore_done_fn done,
                                              void *user, eddy_error *err);
/** Deprecated in 0.3.0: eddy_rstore_checkpoint_remove (the same call). */
EDDY_DEPRECATED("use eddy_rstore_checkpoint_remove")
EDDY_EXPORT eddy_status eddy_rstore_ckpt_remove(eddy_rstore *store, const char *feed_id,
                                                eddy_rstore_done_fn done, void *user,
                                                eddy_error *err);
#endif

/* ---- eddy/rfeed.h ------------------------------------------------------------------------ */
#if defined(EDDY_DEPRECATED_RFEED_H) && !defined(EDDY_DEPRECATED_RFEED_H_DONE)
#define EDDY_DEPRECATED_RFEED_H_DONE
/** Deprecated in 0.3.0: eddy_rstore_checkpoints (eddy/rstore.h; the same call). */
EDDY_DEPRECATED("use eddy_rstore_checkpoints")
EDDY_EXPORT eddy_rcheckpoints eddy_rfeed_store_checkpoints(eddy_rstore *store);
/** Deprecated in 0.3.0: eddy_rfeed_stats (the same call). */
EDDY_DEPRECATED("use eddy_rfeed_stats")
EDDY_EXPORT eddy_status eddy_rfeed_get_info(eddy_rfeed *feed, eddy_feed_info *out);
#endif

/* ---- eddy/rdomain.h ---------------------------------------------------------------------- */
#if defined(EDDY_DEPRECATED_RDOMAIN_H) && !defined(EDDY_DEPRECATED_RDOMAIN_H_DONE)
#define EDDY_DEPRECATED_RDOMAIN_H_DONE
/** Deprecated in 0.3.0: eddy_rdomain_stats (the same call). */
EDDY_DEPRECATED("use eddy_rdomain_stats")
EDDY_EXPORT eddy_status eddy_rdomain_get_info(eddy_rdomain_feed *feed, eddy_feed_info *out);
#endif

/* ---- eddy/rpush.h ------------------------------------------------------------------------ */
#if defined(EDDY_DEPRECATED_RPUSH_H) && !defined(EDDY_DEPRECATED_RPUSH_H_DONE)
#define EDDY_DEPRECATED_RPUSH_H_DONE
/** Deprecated in 0.3.0: eddy_rpush_sources_stats (the same call). */
EDDY_DEPRECATED("use eddy_rpush_sources_stats")
EDDY_EXPORT eddy_status eddy_rpush_sources_status(eddy_rpush_sources *ps, const char *id,
                                                  eddy_push_progress *out);
#endif

#ifdef __cplusplus
}
#endif

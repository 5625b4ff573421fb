/* SPDX-License-Identifier: BSD-3-Clause */
/** @file
 * eddy — the names 0.3.0 replaced in the blocking headers, kept for one release (removed in
 * 0.4.0); the reactive headers' are in eddy/rdeprecated.h.
 *
 * 0.3.0 made the two front ends' names match (docs/twins.md): one word for the checkpoint, one
 * cancellation token, one introspection suffix (_stats), and store reads named alike on both
 * sides. Each old name below still links (same behaviour, same symbol as in 0.2) and still
 * compiles, with a deprecation warning naming its replacement. scripts/rename-0.3.sh rewrites
 * a tree to the new names.
 *
 * Not included on its own: each public header includes it at its end, after defining the
 * section it wants (EDDY_DEPRECATED_<HEADER>_H), so every section sees its header's types.
 */
#ifdef __cplusplus
extern "C" {
#endif

/* ---- eddy/store.h ------------------------------------------------------------------------ */
#if defined(EDDY_DEPRECATED_STORE_H) && !defined(EDDY_DEPRECATED_STORE_H_DONE)
#define EDDY_DEPRECATED_STORE_H_DONE
/** Deprecated in 0.3.0: eddy_store_read_page (the same call). */
EDDY_DEPRECATED("use eddy_store_read_page")
EDDY_EXPORT eddy_status eddy_store_read_all(eddy_store *store, long long after_position,
                                            size_t max_entries, const eddy_filter *filter,
                                            eddy_stored_fn fn, void *user, long long *next_position,
                                            eddy_error *err);
#endif

/* ---- eddy/feed.h ------------------------------------------------------------------------- */
#if defined(EDDY_DEPRECATED_FEED_H) && !defined(EDDY_DEPRECATED_FEED_H_DONE)
#define EDDY_DEPRECATED_FEED_H_DONE
/** Deprecated in 0.3.0: the feed's calls take the one cancellation token, eddy_cancel. */
typedef eddy_cancel eddy_feed_cancel EDDY_DEPRECATED("use eddy_cancel");
/** Deprecated in 0.3.0: eddy_cancel_new. */
EDDY_DEPRECATED("use eddy_cancel_new") EDDY_EXPORT eddy_cancel *eddy_feed_cancel_new(void);
/** Deprecated in 0.3.0: eddy_cancel_fire. */
EDDY_DEPRECATED("use eddy_cancel_fire") EDDY_EXPORT void eddy_feed_cancel_fire(eddy_cancel *c);
/** Deprecated in 0.3.0: eddy_cancel_fired. */
EDDY_DEPRECATED("use eddy_cancel_fired")
EDDY_EXPORT bool eddy_feed_cancel_fired(const eddy_cancel *c);
/** Deprecated in 0.3.0: eddy_cancel_free. */
EDDY_DEPRECATED("use eddy_cancel_free") EDDY_EXPORT void eddy_feed_cancel_free(eddy_cancel *c);
/** Deprecated in 0.3.0: eddy_feed_stats (the same call). */
EDDY_DEPRECATED("use eddy_feed_stats")
EDDY_EXPORT eddy_status eddy_feed_get_info(eddy_feed *feed, eddy_feed_info *out);
#endif

/* ---- eddy/domain.h ----------------------------------------------------------------------- */
#if defined(EDDY_DEPRECATED_DOMAIN_H) && !defined(EDDY_DEPRECATED_DOMAIN_H_DONE)
#define EDDY_DEPRECATED_DOMAIN_H_DONE
/** Deprecated in 0.3.0: eddy_domain_stats (the same call). */
EDDY_DEPRECATED("use eddy_domain_stats")
EDDY_EXPORT eddy_status eddy_domain_get_info(eddy_domain_feed *feed, eddy_feed_info *out);
#endif

/* ---- eddy/push.h ------------------------------------------------------------------------- */
#if defined(EDDY_DEPRECATED_PUSH_H) && !defined(EDDY_DEPRECATED_PUSH_H_DONE)
#define EDDY_DEPRECATED_PUSH_H_DONE
/** Deprecated in 0.3.0: eddy_push_sources_stats (the same call). */
EDDY_DEPRECATED("use eddy_push_sources_stats")
EDDY_EXPORT eddy_status eddy_push_sources_status(eddy_push_sources *ps, const char *id,
                                                 eddy_push_progress *out);
#endif

#ifdef __cplusplus
}
#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The option tables of the structs other than the settings and the subscription spec (those
 * two live beside their code, src/config/settings.c and src/bus/sub.c): a feed's config, the push sources'
 * options and an append's options. Their _init functions take their defaults from here; the
 * rules between fields stay with the code that uses them (src/store/feed.c, src/store/domain.c, ...). */
#include <limits.h>
#include <stddef.h>
#include <string.h>

#include "eddy/feed.h"
#include "eddy/push.h"
#include "eddy/store.h"
#include "eddy/writes.h"
#include "util/options.h"

#define ROW(T, f, type, dstr, def, min, max, flags, unit, ddoc, choices, doc)                      \
    {                                                                                              \
#f, EDDY__OPT_##type, offsetof(T, f), sizeof(((T *)0)->f), EDDY__OPT_NO_COPY, dstr, def,   \
            min, max, flags, unit, ddoc, NULL, choices, doc                                        \
    }

/* ---- eddy_feed_config ------------------------------------------------------------------ */

#define F(...) ROW(eddy_feed_config, __VA_ARGS__)
static const eddy__opt feed_rows[] = {
    F(id, STRING, NULL, 0, 0, 0, EDDY__OPT_REQUIRED, "", "none (required)", NULL,
      "Names the feed's checkpoint: 1-128 printable characters, no space, '{', '}' or ':'"),
    F(projection, CALLBACK, NULL, 0, 0, 0, 0, "", "none (apply required)", NULL,
      "The read model: apply and its user (eddy_projection)"),
    F(decode, CALLBACK, NULL, 0, 0, 0, EDDY__OPT_REQUIRED, "", "none (required)", NULL,
      "Turns a stored event into the projection's event"),
    F(free_event, CALLBACK, NULL, 0, 0, 0, 0, "", "none", NULL, "Frees a decoded event"),
    F(event_id, CALLBACK, NULL, 0, 0, 0, EDDY__OPT_REQUIRED, "", "none (required)", NULL,
      "A decoded event's id (drops live copies already applied)"),
    F(codec_user, POINTER, NULL, 0, 0, 0, 0, "", "NULL", NULL,
      "The user of decode, free_event and event_id"),
    F(checkpoints, POINTER, NULL, 0, 0, 0, 0, "", "none (every catch-up replays all)", NULL,
      "Where the checkpoint is kept (eddy_checkpoints)"),
    F(filter, POINTER, NULL, 0, 0, 0, 0, "", "none (all events)", NULL,
      "Which stored events the replay applies (copied)"),
    F(dedup_cache_size, LONG, NULL, 10000, 1, LONG_MAX, 0, "ids", NULL, NULL,
      "Ids of replayed and applied events kept to drop duplicate live copies"),
    F(max_buffered_events, LONG, NULL, 100000, 1, LONG_MAX, 0, "events", NULL, NULL,
      "Most live events held before the feed is live; later ones are refused"),
    F(page_size, UNSIGNED, NULL, 256, 1, UINT_MAX, 0, "events", NULL, NULL,
      "Stored events examined per replay read"),
    F(log, CALLBACK, NULL, 0, 0, 0, 0, "", "none", NULL, "Where the feed logs"),
    F(log_user, POINTER, NULL, 0, 0, 0, 0, "", "NULL", NULL, "The log hook's user pointer"),
    F(reader, POINTER, NULL, 0, 0, 0, 0, "", "none", NULL,
      "Reads the data fields a filter's data conditions name (eddy_msgpack_reader)"),
    F(writes, CALLBACK, NULL, 0, 0, 0, 0, "", "none (projection.apply)", NULL,
      "Keeps the read model in Redis: each event's write set, committed with its progress"),
};
#undef F

const eddy__opt_table eddy__feed_config_table = {
    .prefix = "feed_config",
    .type_name = "eddy_feed_config",
    .init_name = "eddy_feed_config_init",
    .rows = feed_rows,
    .nrows = sizeof(feed_rows) / sizeof(feed_rows[0]),
    .size = sizeof(eddy_feed_config),
    .size_0_3 = offsetof(eddy_feed_config, reader) + sizeof(void *),
    .doc = "A catch-up feed or domain feed (eddy_feed_new, eddy_rfeed_new, eddy_domain_new, "
           "eddy_rdomain_new): include/eddy/feed.h.",
};

void eddy_feed_config_init_sized(eddy_feed_config *cfg, size_t size) {
    if (cfg)
        eddy__opts_init(&eddy__feed_config_table, cfg, size);
}

/* ---- eddy_push_options ------------------------------------------------------------------ */

static const char *const push_modes[] = {"automatic", "manual", NULL};
static const char *const push_startups[] = {"foreground", "background", NULL};
#define P(...) ROW(eddy_push_options, __VA_ARGS__)
static const eddy__opt push_rows[] = {
    P(mode, ENUM, NULL, EDDY_PUSH_AUTOMATIC, 0, 1, 0, "", NULL, push_modes,
      "automatic: each source registers with its feed; manual: started together by start_all"),
    P(startup, ENUM, NULL, EDDY_PUSH_FOREGROUND, 0, 1, 0, "", NULL, push_startups,
      "foreground: the catch-up runs on the calling thread; background: on its own"),
    P(progress, CALLBACK, NULL, 0, 0, 0, 0, "", "none", NULL, "Told of the catch-up's progress"),
    P(progress_user, POINTER, NULL, 0, 0, 0, 0, "", "NULL", NULL, "progress's user pointer"),
    P(progress_ms, UNSIGNED, NULL, 250, 0, UINT_MAX, 0, "ms", NULL, NULL,
      "How often progress is told"),
    P(observer, CALLBACK, NULL, 0, 0, 0, 0, "", "none", NULL,
      "Told the outcome of each message a source routed (eddy_push_observer)"),
    P(log, CALLBACK, NULL, 0, 0, 0, 0, "", "none", NULL, "Where the sources log"),
    P(log_user, POINTER, NULL, 0, 0, 0, 0, "", "NULL", NULL, "The log hook's user pointer"),
};
#undef P

const eddy__opt_table eddy__push_options_table = {
    .prefix = "push_options",
    .type_name = "eddy_push_options",
    .init_name = "eddy_push_options_init",
    .rows = push_rows,
    .nrows = sizeof(push_rows) / sizeof(push_rows[0]),
    .size = sizeof(eddy_push_options),
    .size_0_3 = offsetof(eddy_push_options, log_user) + sizeof(void *),
    .doc = "Push sources (eddy_push_sources_new, eddy_rpush_sources_new): include/eddy/push.h.",
};

void eddy_push_options_init_sized(eddy_push_options *o, size_t size) {
    if (o)
        eddy__opts_init(&eddy__push_options_table, o, size);
}

/* ---- eddy_append_opts ------------------------------------------------------------------- */

#define A(...) ROW(eddy_append_opts, __VA_ARGS__)
static const eddy__opt append_rows[] = {
    A(expected_version, LLONG, NULL, EDDY_ANY_VERSION, LLONG_MIN, LLONG_MAX, 0, "version",
      "`EDDY_ANY_VERSION`", NULL,
      "EDDY_ANY_VERSION, EDDY_NO_STREAM, or the version the stream must be at"),
    A(publish_subject, STRING, NULL, 0, 0, 0, 0, "", "none", NULL,
      "Also publish the events to this subject, in the same atomic step"),
};
#undef A

const eddy__opt_table eddy__append_opts_table = {
    .prefix = "append_opts",
    .type_name = "eddy_append_opts",
    .init_name = "eddy_append_opts_init",
    .rows = append_rows,
    .nrows = sizeof(append_rows) / sizeof(append_rows[0]),
    .size = sizeof(eddy_append_opts),
    .size_0_3 = offsetof(eddy_append_opts, publish_subject) + sizeof(char *),
    .doc = "An event-store append (eddy_store_append, eddy_rstore_append): include/eddy/store.h.",
};

void eddy_append_opts_init_sized(eddy_append_opts *o, size_t size) {
    if (o)
        eddy__opts_init(&eddy__append_opts_table, o, size);
}

const eddy__opt_table *const eddy__opt_tables[] = {
    &eddy__settings_table,
    &eddy__subscription_spec_table,
    &eddy__feed_config_table,
    &eddy__push_options_table,
    &eddy__append_opts_table,
    &eddy__gather_opts_table,
    NULL,
};

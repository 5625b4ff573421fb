/* SPDX-License-Identifier: BSD-3-Clause */
/* The names of eddy's Redis function library and of its functions, and the limits its Lua code
 * sets: the contract between the library's source (link/library.c), the memory engine that
 * runs the same functions natively (memory/function.c) and their callers (the store, the
 * publisher). */
#ifndef EDDY_SRC_UTIL_FUNCTIONS_H
#define EDDY_SRC_UTIL_FUNCTIONS_H

#include "eddy/version.h"

/* The library and function names, as Redis and the memory engine know them. They carry eddy's
 * version, so that two versions of eddy serving one Redis during an upgrade each load and call
 * their own (FUNCTION LOAD REPLACE of one name would have them overwrite each other's code). */
#define EDDY__STR_(x) #x
#define EDDY__STR(x) EDDY__STR_(x)
#define EDDY__STORE_LIBRARY                                                                        \
    "eddy_" EDDY__STR(EDDY_VERSION_MAJOR) "_" EDDY__STR(EDDY_VERSION_MINOR) "_" EDDY__STR(         \
        EDDY_VERSION_PATCH)
#define EDDY__STORE_APPEND_FN EDDY__STORE_LIBRARY "_append"
/* The append with publish when publish_dedup_ms is on, and the deduplicated publish
 * (bus/publisher.h). */
#define EDDY__STORE_APPEND_DEDUP_FN EDDY__STORE_LIBRARY "_append_dedup"
#define EDDY__PUBLISH_FN EDDY__STORE_LIBRARY "_publish"
/* A transactional handler's commit (eddy_delivery_emit, bus/consumer.c): its outputs appended
 * and its input acknowledged in one call, unless the input was no longer pending. */
#define EDDY__COMMIT_FN EDDY__STORE_LIBRARY "_commit"
/* A read model's commit (eddy_feed_config.writes, store/model.h): the write sets of one or
 * more events applied together with the model's position, skipping events at or below it. */
#define EDDY__MODEL_FN EDDY__STORE_LIBRARY "_model"

/* Most entry fields (names and values) an event may have in the store: eddy_append passes an
 * event's fields to XADD as Lua call arguments, and Lua's stack holds about 8000. */
#define EDDY__STORE_MAX_FIELDS 4000
/* Versions and positions stay below this (15 digits): Lua counts in doubles, exact to 2^53. */
#define EDDY__STORE_MAX_COUNT 999999999999999LL

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The fields an entry carries besides its event's ('_' fields are not attributes), and the
 * extension attribute reserved to the bus: what the publisher, the consumer, the store and the
 * function library's Lua source (link/library.c) agree on. */
#ifndef EDDY_SRC_EVENTS_FIELDS_H
#define EDDY_SRC_EVENTS_FIELDS_H

/* A stored entry's metadata (store/store.h). */
#define EDDY__F_STREAM "_stream"
#define EDDY__F_VERSION "_version"
#define EDDY__F_POSITION "_position"

/* Field names a request entry carries besides the event ('_' fields are not attributes). */
#define EDDY__F_REPLY_TO "_reply_to"
#define EDDY__F_REQUEST "_request"
#define EDDY__F_DEADLINE "_deadline"
/* The extension attribute that marks a failure reply; reserved to the bus. */
#define EDDY__FAILED_ATTR "messagingfailed"

#endif

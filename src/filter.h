/* Filters of reads across the store, as the core holds them (the public type is opaque).
 *
 * A filter is a tree so that the kinds issue 5 brings (source, subject, time range, data-field
 * conditions, and/or combinations) slot in as new kinds beside the type set, without changing
 * how reads and feeds use it: they only call eddy_filter_matches. */
#ifndef EDDY_SRC_FILTER_H
#define EDDY_SRC_FILTER_H

#include <stddef.h>

#include "eddy/store.h"

typedef enum eddy__filter_kind {
    EDDY__FILTER_TYPES /* the event's type is one of a set */
} eddy__filter_kind;

struct eddy_filter {
    eddy__filter_kind kind;
    union {
        struct {
            char **v; /* sorted, distinct, owned */
            size_t n;
        } types;
    } u;
};

#endif

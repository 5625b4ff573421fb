/* SPDX-License-Identifier: BSD-3-Clause */
/* Filters of stored and live events, as the core holds them (the public type is opaque).
 *
 * A filter is a tree: leaves test one attribute or one data field, and/or nodes hold their
 * operands in order. Nested operations of the same kind are flattened into one node
 * (and(and(a, b), c) is and(a, b, c)), so a long chain built one operand at a time stays
 * shallow; only alternating and/or adds depth, which is bounded so that matching, copying
 * and freeing (all recursive) use a bounded stack. */
#ifndef EDDY_SRC_FILTER_H
#define EDDY_SRC_FILTER_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/filter.h"
#include "util/rfc3339.h"

/* Deepest nesting of and/or nodes a filter may have; a constructor that would go deeper
 * returns NULL. */
#define EDDY__FILTER_MAX_DEPTH 64

typedef enum eddy__filter_kind {
    EDDY__FILTER_TYPES,   /* the event's type is one of a set */
    EDDY__FILTER_SOURCE,  /* the event's source equals a string */
    EDDY__FILTER_SUBJECT, /* the event's subject equals a string */
    EDDY__FILTER_TIME,    /* the event's time lies in [from, to) */
    EDDY__FILTER_DATA,    /* a condition on a data field */
    EDDY__FILTER_AND,     /* every operand matches */
    EDDY__FILTER_OR       /* some operand matches */
} eddy__filter_kind;

struct eddy_filter {
    eddy__filter_kind kind;
    unsigned depth;  /* 1 for a leaf, 1 + the deepest operand for and/or */
    bool needs_data; /* this node or one below it is a data condition */
    union {
        struct {
            char **v; /* sorted, distinct, owned */
            size_t n;
        } types;
        char *str; /* SOURCE, SUBJECT: owned */
        struct {
            bool has_from, has_to;
            eddy__instant from, to;
        } time;
        struct {
            char *path;       /* owned; non-empty '.'-separated segments */
            eddy_data_op op;  /* a valid op */
            eddy_field value; /* NIL for EXISTS; a STRING's bytes owned (NUL-terminated);
                                 UINT only above INT64_MAX; never OTHER */
        } data;
        struct {
            eddy_filter **v; /* owned operands in order, n >= 2 */
            size_t n, cap;
        } list;
    } u;
};

#endif

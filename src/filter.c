/* Filters of reads across the store; see filter.h.
 *
 * Filtering happens on the client, after a page is read, and not in Redis: a stream entry is
 * a flat list of fields with no index, so the server could only do the same scan (in Lua,
 * holding up every other client while it runs) and would still have to ship the page's
 * positions back for the reader to advance. Conditions on the event's data need a reader of
 * the data's encoding, which only the client has. So a page is bounded by the entries it
 * examines, and the filter decides which of them reach the caller.
 *
 * Invariant: a types filter holds its strings sorted and without duplicates, so matching is a
 * binary search. */
#include "filter.h"

#include <stdlib.h>
#include <string.h>

static int str_cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

eddy_filter *eddy_filter_types(const char *const *types, size_t n) {
    if (n && !types)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (!types[i])
            return NULL;
    eddy_filter *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->kind = EDDY__FILTER_TYPES;
    if (n && !(f->u.types.v = calloc(n, sizeof(char *)))) {
        free(f);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (!(f->u.types.v[i] = strdup(types[i]))) {
            f->u.types.n = i;
            eddy_filter_free(f);
            return NULL;
        }
    }
    f->u.types.n = n;
    if (n > 1) {
        qsort(f->u.types.v, n, sizeof(char *), str_cmp);
        size_t out = 1;
        for (size_t i = 1; i < n; i++) {
            if (strcmp(f->u.types.v[out - 1], f->u.types.v[i]) == 0)
                free(f->u.types.v[i]);
            else
                f->u.types.v[out++] = f->u.types.v[i];
        }
        f->u.types.n = out;
    }
    return f;
}

void eddy_filter_free(eddy_filter *f) {
    if (!f)
        return;
    switch (f->kind) {
    case EDDY__FILTER_TYPES:
        for (size_t i = 0; i < f->u.types.n; i++)
            free(f->u.types.v[i]);
        free(f->u.types.v);
        break;
    }
    free(f);
}

bool eddy_filter_matches(const eddy_filter *f, const eddy_event *ev) {
    if (!f)
        return true;
    if (!ev)
        return false;
    switch (f->kind) {
    case EDDY__FILTER_TYPES: {
        const char *type = eddy_event_type(ev);
        return type && f->u.types.n &&
               bsearch(&type, f->u.types.v, f->u.types.n, sizeof(char *), str_cmp) != NULL;
    }
    }
    return false;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Backend URLs: memory://[name], redis://[user:password@]host[:port][/db] (rediss://: the same
 * over TLS), unix:///path[?db=N],
 * redis-sentinel://[user:password@]host[:port][,host[:port]...]/master-name[/db] (port 26379 by
 * default; the credentials and db are the master's; rediss-sentinel:// is TLS to the sentinels
 * and the master),
 * redis-cluster://[user:password@]host[:port][,host[:port]...][/0] (port 6379 by default; seed
 * nodes asked for the slot map; only db 0, the only one a cluster has; rediss-cluster:// is TLS
 * to every node)
 * (also redis+unix:// is not accepted: one spelling each). Percent-escapes are not decoded
 * except %40 (@), %3A (:) and %25 (%) in user and password. */
#ifndef EDDY_SRC_URL_H
#define EDDY_SRC_URL_H

#include <stdbool.h>
#include <stddef.h>

#include "eddy/status.h"

typedef enum {
    EDDY__URL_MEMORY,
    EDDY__URL_TCP,
    EDDY__URL_UNIX,
    EDDY__URL_SENTINEL,
    EDDY__URL_CLUSTER
} eddy__url_kind;

typedef struct eddy__hostport {
    char *host;
    int port;
} eddy__hostport;

typedef struct eddy__url {
    eddy__url_kind kind;
    char *name;     /* memory: store name ("" for memory://); sentinel: the master's name */
    char *host;     /* tcp */
    int port;       /* tcp, default 6379 */
    char *path;     /* unix */
    char *user;     /* NULL when absent */
    char *password; /* NULL when absent */
    int db;         /* default 0 */
    bool tls;       /* rediss://, rediss-sentinel://, rediss-cluster:// */
    /* sentinel: the sentinels to ask, in order; cluster: the seed nodes asked for the slot map */
    eddy__hostport *sentinels;
    size_t nsentinels;
} eddy__url;

/* EDDY_ERR_INVALID_URL naming what is wrong; on success the caller frees with eddy__url_free. */
eddy_status eddy__url_parse(const char *text, eddy__url *out, eddy_error *err);
void eddy__url_free(eddy__url *url);

/* What the backend a URL names can do (EDDY_CAP_* from eddy/bus.h). */
unsigned eddy__capabilities(const eddy__url *url);

#endif

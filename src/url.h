/* Backend URLs: memory://[name], redis://[user:password@]host[:port][/db] (rediss://: the same
 * over TLS), unix:///path[?db=N]
 * (also redis+unix:// is not accepted: one spelling each). Percent-escapes are not decoded
 * except %40 (@), %3A (:) and %25 (%) in user and password. */
#ifndef EDDY_SRC_URL_H
#define EDDY_SRC_URL_H

#include <stdbool.h>

#include "eddy/status.h"

typedef enum { EDDY__URL_MEMORY, EDDY__URL_TCP, EDDY__URL_UNIX } eddy__url_kind;

typedef struct eddy__url {
    eddy__url_kind kind;
    char *name;     /* memory: store name ("" for memory://) */
    char *host;     /* tcp */
    int port;       /* tcp, default 6379 */
    char *path;     /* unix */
    char *user;     /* NULL when absent */
    char *password; /* NULL when absent */
    int db;         /* default 0 */
    bool tls;       /* rediss:// */
} eddy__url;

/* EDDY_ERR_INVALID_URL naming what is wrong; on success the caller frees with eddy__url_free. */
eddy_status eddy__url_parse(const char *text, eddy__url *out, eddy_error *err);
void eddy__url_free(eddy__url *url);

/* What the backend a URL names can do (EDDY_CAP_* from eddy/bus.h). */
unsigned eddy__capabilities(const eddy__url *url);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* Which backend can do what. A feature is declared only once it is implemented. */
#include "eddy/bus.h"
#include "error.h"
#include "util/url.h"

eddy_status eddy_backend_capabilities(const char *url, unsigned *caps, eddy_error *err) {
    if (!url || !caps)
        return eddy__fail(err, EDDY_ERR_INVALID_ARGUMENT, "url or caps is NULL");
    eddy__url parsed;
    eddy_status st = eddy__url_parse(url, &parsed, err);
    if (st != EDDY_OK)
        return st;
    *caps = eddy__capabilities(&parsed);
    eddy__url_free(&parsed);
    return EDDY_OK;
}

unsigned eddy__capabilities(const eddy__url *url) {
    unsigned caps = EDDY_CAP_GROUPS | EDDY_CAP_REQUEST_REPLY | EDDY_CAP_EVENT_STORE;
    if (url->kind != EDDY__URL_MEMORY)
        caps |= EDDY_CAP_CROSS_PROCESS;
    return caps;
}

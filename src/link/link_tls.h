/* SPDX-License-Identifier: BSD-3-Clause */
/* The TLS layer of a link (link.h), over OpenSSL: a client session on a connected non-blocking
 * socket, verifying the server's certificate and host name unless told not to. Every call
 * says what the socket must become ready for when OpenSSL would block. No call raises SIGPIPE.
 * Thread: one thread at a time per session. */
#ifndef EDDY_SRC_LINK_TLS_H
#define EDDY_SRC_LINK_TLS_H

#include <stddef.h>
#include <sys/types.h>

#include "config/settings.h"

typedef struct eddy__tls eddy__tls;

/* A session for fd (connected), configured from s (tls_* settings) for server `host`.
 * EDDY_ERR_TLS for unreadable CA or certificate files, EDDY_ERR_NOMEM. */
eddy_status eddy__tls_new(const eddy__settings *s, const char *host, int fd, eddy__tls **out,
                          eddy_error *err);
void eddy__tls_free(eddy__tls *t);

/* Steps the handshake: 0 when done, EDDY__LINK_READ or EDDY__LINK_WRITE when it waits for the
 * socket, -1 with err set (EDDY_ERR_TLS naming OpenSSL's reason, the certificate's included). */
int eddy__tls_handshake(eddy__tls *t, eddy_error *err);
/* Writes / reads up to len bytes: how many (> 0), 0 when it would block (*want says for
 * what), -1 with err set (EDDY_ERR_IO for a closed or reset connection). */
ssize_t eddy__tls_write(eddy__tls *t, const char *buf, size_t len, unsigned *want, eddy_error *err);
ssize_t eddy__tls_read(eddy__tls *t, char *buf, size_t len, unsigned *want, eddy_error *err);

#endif

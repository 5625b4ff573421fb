/* SPDX-License-Identifier: BSD-3-Clause */
/* TLS for tests: certificates made with the openssl command into a directory, and a private
 * redis-server that speaks only TLS (--port 0 --tls-port P) on 127.0.0.1, with
 * tls-auth-clients yes (a client certificate signed by the test CA is required). Both front
 * ends' TLS tests use them. */
#ifndef EDDY_TEST_TLS_SERVER_H
#define EDDY_TEST_TLS_SERVER_H

#include "redis_server.h"

/* Files made by eddy_test_tls_certs, all PEM, in dir. */
typedef struct eddy_test_tls_files {
    char dir[64];
    char ca[192];          /* the test CA, which signed everything below */
    char other_ca[192];    /* a CA that signed nothing here (a wrong CA) */
    char server_cert[192]; /* CN localhost, SAN DNS:localhost and IP:127.0.0.1 */
    char server_key[192];
    char expired_cert[192]; /* the same names, expired (the server_key's) */
    char client_cert[192];  /* a client certificate signed by the test CA */
    char client_key[192];
} eddy_test_tls_files;

/* Makes the files in a new temporary directory; fails the test when openssl fails. */
void eddy_test_tls_certs(eddy_test_tls_files *f);
/* Removes the directory. */
void eddy_test_tls_certs_remove(eddy_test_tls_files *f);

/* Starts redis-server with TLS only, presenting cert (f->server_cert or f->expired_cert), on a
 * free port (port 0) or the given one; r->url is rediss://localhost:PORT. Ready once the TLS
 * port accepts connections. */
void eddy_test_tls_redis_start(eddy_test_redis *r, const eddy_test_tls_files *f, const char *cert,
                               int port);

#endif

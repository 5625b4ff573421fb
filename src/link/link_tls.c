/* SPDX-License-Identifier: BSD-3-Clause */
/* OpenSSL under a link; see link_tls.h.
 *
 * One SSL_CTX per session: a link makes a session per connect, rarely, and a context holds the
 * CA store the settings name, so sharing one would only save reading those files again.
 * SIGPIPE: OpenSSL's socket BIO writes with write(2), so every call that may write runs with
 * SIGPIPE blocked in this thread (sigpipe.h). */
#include "link/link_tls.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "link/link.h"
#include "util/sigpipe.h"

struct eddy__tls {
    SSL_CTX *ctx;
    SSL *ssl;
    /* The server asked for a client certificate and none is set: with TLS 1.3 its refusal comes
     * after the handshake, as an alert or (when it closes first) a reset; either is said so. */
    bool cert_wanted;
};

/* OpenSSL calls it only when the server asks for a certificate and none was set. */
static int no_client_cert(SSL *ssl, X509 **x509, EVP_PKEY **pkey) {
    (void)x509;
    (void)pkey;
    eddy__tls *t = SSL_get_app_data(ssl);
    if (t)
        t->cert_wanted = true;
    return 0;
}

/* OpenSSL's reason for the last failure, with the certificate's when verification failed. */
static eddy_status tls_fail(eddy__tls *t, const char *what, eddy_error *err) {
    unsigned long e = ERR_peek_last_error();
    char reason[256] = "";
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    long v = t && t->ssl ? SSL_get_verify_result(t->ssl) : X509_V_OK;
    if (v != X509_V_OK)
        return eddy__fail(err, EDDY_ERR_TLS, "TLS %s: server certificate refused: %s", what,
                          X509_verify_cert_error_string(v));
    int r = e ? ERR_GET_REASON(e) : 0;
    if (e && ERR_GET_LIB(e) == ERR_LIB_SSL &&
        (r == SSL_R_WRONG_VERSION_NUMBER || r == SSL_R_PACKET_LENGTH_TOO_LONG ||
         r == SSL_R_HTTP_REQUEST || r == SSL_R_UNKNOWN_PROTOCOL))
        return eddy__fail(err, EDDY_ERR_TLS,
                          "TLS %s: the server did not answer the TLS handshake (it answered "
                          "bytes that are not TLS: a plain port? use redis://) (%s)",
                          what, reason);
    return eddy__fail(err, EDDY_ERR_TLS, "TLS %s: %s", what, reason[0] ? reason : "failed");
}

/* A file (or directory) the settings name, checked before OpenSSL reads it so that a missing or
 * unreadable one is said with its name and the system's reason (OpenSSL's alone is "system
 * lib", and a CA directory is only read at verification). */
static eddy_status readable(const char *what, const char *path, bool dir, eddy_error *err) {
    errno = 0;
    if (dir) {
        DIR *d = opendir(path);
        if (!d)
            return eddy__fail(err, EDDY_ERR_TLS, "TLS %s '%s': %s", what, path, strerror(errno));
        closedir(d);
    } else {
        FILE *f = fopen(path, "rb");
        if (!f)
            return eddy__fail(err, EDDY_ERR_TLS, "TLS %s '%s': %s", what, path, strerror(errno));
        fclose(f);
    }
    return EDDY_OK;
}

/* A file OpenSSL could read and not use: its name and OpenSSL's reason. */
static eddy_status file_fail(const char *what, const char *path, eddy_error *err) {
    unsigned long e = ERR_peek_last_error();
    char reason[200] = "";
    if (e)
        ERR_error_string_n(e, reason, sizeof(reason));
    ERR_clear_error();
    if (e && ERR_GET_LIB(e) == ERR_LIB_X509 && ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH)
        return eddy__fail(err, EDDY_ERR_TLS,
                          "TLS %s '%s' does not match the client certificate (tls_cert)", what,
                          path);
    return eddy__fail(err, EDDY_ERR_TLS, "TLS %s '%s': not usable (%s)", what, path,
                      reason[0] ? reason : "no PEM certificate or key in it");
}

void eddy__tls_free(eddy__tls *t) {
    if (!t)
        return;
    SSL_free(t->ssl);
    SSL_CTX_free(t->ctx);
    free(t);
}

static eddy_status configure(const eddy__settings *s, eddy__tls *t, eddy_error *err) {
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    if (s->tls_cacert || s->tls_cacertdir) {
        /* One at a time, so that the error names the one that failed. */
        const char *ca = "CA file (tls_cacert)", *cadir = "CA directory (tls_cacertdir)";
        if (s->tls_cacert && readable(ca, s->tls_cacert, false, err) != EDDY_OK)
            return EDDY_ERR_TLS;
        if (s->tls_cacert && SSL_CTX_load_verify_locations(t->ctx, s->tls_cacert, NULL) != 1)
            return file_fail(ca, s->tls_cacert, err);
        if (s->tls_cacertdir && readable(cadir, s->tls_cacertdir, true, err) != EDDY_OK)
            return EDDY_ERR_TLS;
        if (s->tls_cacertdir && SSL_CTX_load_verify_locations(t->ctx, NULL, s->tls_cacertdir) != 1)
            return file_fail(cadir, s->tls_cacertdir, err);
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        return tls_fail(t, "system CA store", err);
    }
    if (s->tls_cert) {
        const char *cert = "client certificate (tls_cert)", *key = "client key (tls_key)";
        if (readable(cert, s->tls_cert, false, err) != EDDY_OK)
            return EDDY_ERR_TLS;
        if (SSL_CTX_use_certificate_chain_file(t->ctx, s->tls_cert) != 1)
            return file_fail(cert, s->tls_cert, err);
        if (!s->tls_key)
            return eddy__fail(err, EDDY_ERR_TLS,
                              "TLS client certificate (tls_cert) without its key (tls_key)");
        if (readable(key, s->tls_key, false, err) != EDDY_OK)
            return EDDY_ERR_TLS;
        if (SSL_CTX_use_PrivateKey_file(t->ctx, s->tls_key, SSL_FILETYPE_PEM) != 1)
            return file_fail(key, s->tls_key, err);
    }
    SSL_CTX_set_verify(t->ctx, s->tls_insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_client_cert_cb(t->ctx, no_client_cert);
    return EDDY_OK;
}

eddy_status eddy__tls_new(const eddy__settings *s, const char *host, int fd, eddy__tls **out,
                          eddy_error *err) {
    *out = NULL;
    eddy__tls *t = calloc(1, sizeof(*t));
    if (!t)
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting TLS");
    ERR_clear_error();
    if (!(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        eddy__tls_free(t);
        return eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting TLS");
    }
    eddy_status st = configure(s, t, err);
    const char *name = s->tls_sni ? s->tls_sni : host;
    if (st == EDDY_OK && !(t->ssl = SSL_new(t->ctx)))
        st = eddy__fail(err, EDDY_ERR_NOMEM, "out of memory starting TLS");
    if (st == EDDY_OK && SSL_set_fd(t->ssl, fd) != 1)
        st = tls_fail(t, "setup", err);
    if (st == EDDY_OK)
        SSL_set_app_data(t->ssl, t);
    /* SNI takes a host name only (not an address); the certificate must name the same host, or
     * the address (an IP SAN) when the URL gives one. */
    unsigned char bin[sizeof(struct in6_addr)];
    bool address = inet_pton(AF_INET, name, bin) == 1 || inet_pton(AF_INET6, name, bin) == 1;
    if (st == EDDY_OK && !address && SSL_set_tlsext_host_name(t->ssl, name) != 1)
        st = tls_fail(t, "server name (SNI)", err);
    if (st == EDDY_OK && !s->tls_insecure &&
        (address ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name)
                 : SSL_set1_host(t->ssl, name)) != 1)
        st = tls_fail(t, "host name check", err);
    if (st != EDDY_OK) {
        eddy__tls_free(t);
        return st;
    }
    SSL_set_connect_state(t->ssl);
    *out = t;
    return EDDY_OK;
}

/* What SSL_get_error says about a call that returned rc <= 0: a want (> 0), or -1. */
static int want_of(eddy__tls *t, int rc) {
    switch (SSL_get_error(t->ssl, rc)) {
    case SSL_ERROR_WANT_READ:
        return EDDY__LINK_READ;
    case SSL_ERROR_WANT_WRITE:
        return EDDY__LINK_WRITE;
    default:
        return -1;
    }
}

int eddy__tls_handshake(eddy__tls *t, eddy_error *err) {
    eddy__sigpipe_guard g;
    eddy__sigpipe_block(&g);
    ERR_clear_error();
    int rc = SSL_do_handshake(t->ssl);
    int want = rc == 1 ? 0 : want_of(t, rc);
    eddy__sigpipe_restore(&g);
    if (want < 0)
        tls_fail(t, "handshake", err);
    return want;
}

/* The status of a failed read or write: a closed or reset connection is plain I/O. */
static ssize_t io_fail(eddy__tls *t, int rc, const char *what, eddy_error *err) {
    int e = SSL_get_error(t->ssl, rc);
    if (t->cert_wanted)
        eddy__fail(err, EDDY_ERR_TLS,
                   "TLS %s: the server asked for a client certificate and none is set "
                   "(tls_cert, tls_key)",
                   what);
    else if (e == SSL_ERROR_ZERO_RETURN || e == SSL_ERROR_SYSCALL)
        eddy__fail(err, EDDY_ERR_IO, "connection: %s", "closed or reset (TLS)");
    else
        tls_fail(t, what, err);
    return -1;
}

ssize_t eddy__tls_write(eddy__tls *t, const char *buf, size_t len, unsigned *want,
                        eddy_error *err) {
    eddy__sigpipe_guard g;
    eddy__sigpipe_block(&g);
    ERR_clear_error();
    int n = len > (1u << 30) ? 1 << 30 : (int)len;
    int rc = SSL_write(t->ssl, buf, n);
    int w = rc > 0 ? 0 : want_of(t, rc);
    ssize_t out = rc > 0 ? rc : w > 0 ? 0 : io_fail(t, rc, "write", err);
    eddy__sigpipe_restore(&g);
    *want = w > 0 ? (unsigned)w : 0;
    return out;
}

ssize_t eddy__tls_read(eddy__tls *t, char *buf, size_t len, unsigned *want, eddy_error *err) {
    eddy__sigpipe_guard g;
    eddy__sigpipe_block(&g);
    ERR_clear_error();
    int rc = SSL_read(t->ssl, buf, len > (1u << 30) ? 1 << 30 : (int)len);
    int w = rc > 0 ? 0 : want_of(t, rc);
    ssize_t out = rc > 0 ? rc : w > 0 ? 0 : io_fail(t, rc, "read", err);
    eddy__sigpipe_restore(&g);
    *want = w > 0 ? (unsigned)w : 0;
    return out;
}

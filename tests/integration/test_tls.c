/* SPDX-License-Identifier: BSD-3-Clause */
/* rediss:// on the blocking front end, against Debian's redis-server speaking only TLS with
 * certificates this test makes (tls_server.h): publish, consume and request work; a wrong CA, a
 * wrong host name, an expired server certificate and a missing client certificate are each
 * refused with EDDY_ERR_TLS and a detail saying why. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "eddy/blocking.h"
#include "eddy_test.h"
#include "recorder.h"
#include "tls_server.h"

static eddy_test_tls_files files;
static eddy_test_redis srv;

static void setup_tls(void) {
    eddy_test_tls_certs(&files);
    eddy_test_tls_redis_start(&srv, &files, files.server_cert, 0);
}

static void teardown_tls(void) {
    eddy_test_redis_kill(&srv);
    eddy_test_tls_certs_remove(&files);
}

TestSuite(tls, .init = setup_tls, .fini = teardown_tls, .timeout = 120);

static void tls_settings(eddy_settings *s, const char *url, char *ns, size_t nslen) {
    eddy_settings_init(s);
    s->url = url;
    s->ns = eddy_test_namespace(ns, nslen, "tls");
    s->source = "/tests/tls";
    s->block_ms = 200;
    s->connect_timeout_ms = 3000;
    s->log = eddy_test_log;
    s->log_user = "tls";
    s->tls_cacert = files.ca;
    s->tls_cert = files.client_cert;
    s->tls_key = files.client_key;
}

static atomic_int consumed;

static eddy_status handle(eddy_delivery *d, void *user) {
    (void)d;
    (void)user;
    atomic_fetch_add(&consumed, 1);
    return EDDY_OK;
}

static eddy_status respond(eddy_delivery *d, eddy_event **reply, void *user) {
    (void)d;
    (void)user;
    *reply = make_event("re", "t.reply");
    return EDDY_OK;
}

static bool all_consumed(void *want) { return atomic_load(&consumed) >= *(int *)want; }

Test(tls, publish_consume_and_request_over_tls) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    eddy_subscription_spec sp[2];
    eddy_subscription_spec_init(&sp[0]);
    sp[0].name = "sub";
    sp[0].pattern = "orders";
    sp[0].group = "g";
    sp[0].delivery = EDDY_AT_LEAST_ONCE;
    sp[0].handler = handle;
    eddy_subscription_spec_init(&sp[1]);
    sp[1].name = "svc";
    sp[1].pattern = "svc";
    sp[1].group = "svc";
    sp[1].responder = respond;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_assert_eq(eddy_bus_new(&s, sp, 2, &bus, &err), EDDY_OK, "%s", err.detail);
    cr_assert_eq(eddy_bus_start(bus, &err), EDDY_OK, "%s", err.detail);
    int n = 50;
    for (int i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof(id), "o%d", i);
        eddy_event *ev = make_event(id, "t.order");
        cr_assert_eq(eddy_bus_publish(bus, "orders", ev, NULL, 0, &err), EDDY_OK, "%s", err.detail);
        eddy_event_free(ev);
    }
    cr_expect(eddy_test_wait_until(all_consumed, &n, 20000), "consumed %d of %d",
              atomic_load(&consumed), n);
    eddy_event *q = make_event("q", "t.ask");
    eddy_request_opts o = {eddy_deadline_in(5000), NULL, NULL};
    eddy_event *reply = NULL;
    cr_expect_eq(eddy_bus_request(bus, "svc", q, &o, &reply, &err), EDDY_OK, "%s", err.detail);
    cr_expect(reply && strcmp(eddy_event_type(reply), "t.reply") == 0);
    eddy_event_free(reply);
    eddy_event_free(q);
    eddy_bus_free(bus);
}

/* A bus that must be refused: eddy_bus_new connects its publishing connection; with nothing to
 * ask in the handshake, a refusal the server sends after its side of the handshake comes with
 * the first command. */
static void expect_refused(eddy_settings *s, const char *why) {
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(s, NULL, 0, &bus, &err);
    if (st == EDDY_OK) {
        eddy_event *ev = make_event("x", "t");
        st = eddy_bus_publish(bus, "x", ev, NULL, 0, &err);
        eddy_event_free(ev);
        eddy_bus_free(bus);
    }
    cr_log_info("refused: %s: %s", eddy_status_name(st), err.detail);
    cr_expect_eq(st, EDDY_ERR_TLS, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, why), "detail '%s' should say '%s'", err.detail, why);
}

Test(tls, a_wrong_ca_is_refused) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_cacert = files.other_ca;
    expect_refused(&s, "certificate");
}

Test(tls, a_wrong_host_name_is_refused) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_sni = "not-this-server.example";
    expect_refused(&s, "hostname mismatch");
    /* The address is checked against the certificate's IP names too. */
    char url[64];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", srv.port);
    tls_settings(&s, url, ns, sizeof(ns));
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "127.0.0.1 is in the SAN: %s",
                 err.detail);
    eddy_bus_free(bus);
}

Test(tls, verification_off_takes_a_wrong_ca) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_cacert = files.other_ca;
    s.tls_insecure = true;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    cr_expect_eq(eddy_bus_new(&s, NULL, 0, &bus, &err), EDDY_OK, "%s", err.detail);
    eddy_bus_free(bus);
}

Test(tls, an_expired_certificate_is_refused) {
    eddy_test_redis old;
    eddy_test_tls_redis_start(&old, &files, files.expired_cert, 0);
    struct timespec ts = {1, 100000000}; /* its notAfter is the second it was made */
    nanosleep(&ts, NULL);
    char ns[96];
    eddy_settings s;
    tls_settings(&s, old.url, ns, sizeof(ns));
    expect_refused(&s, "expired");
    eddy_test_redis_kill(&old);
}

Test(tls, a_missing_client_certificate_is_refused) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_cert = NULL;
    s.tls_key = NULL;
    expect_refused(&s, "client certificate");
}

Test(tls, plain_redis_to_a_tls_port_fails_cleanly) {
    char ns[96], url[64];
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", srv.port);
    eddy_settings s;
    tls_settings(&s, url, ns, sizeof(ns));
    s.connect_timeout_ms = 1000;
    s.command_timeout_ms = 1000;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    if (st == EDDY_OK) {
        eddy_event *ev = make_event("x", "t");
        st = eddy_bus_publish(bus, "x", ev, NULL, 0, &err);
        eddy_event_free(ev);
        eddy_bus_free(bus);
    }
    cr_expect_neq(st, EDDY_OK, "a TLS port does not answer RESP");
}

/* A bus that cannot even start TLS: the detail names the file and the system's reason. */
static void expect_file_named(eddy_settings *s, const char *path, const char *why) {
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(s, NULL, 0, &bus, &err);
    eddy_bus_free(bus);
    cr_expect_eq(st, EDDY_ERR_TLS, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, path), "detail '%s' should name '%s'", err.detail, path);
    cr_expect(strstr(err.detail, why), "detail '%s' should say '%s'", err.detail, why);
    cr_expect(!strstr(err.detail, "system lib"), "OpenSSL's bare reason: %s", err.detail);
}

Test(tls, a_missing_ca_file_or_directory_is_named_with_the_reason) {
    char ns[96], path[256];
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    snprintf(path, sizeof(path), "%s/no-such-ca.pem", files.dir);
    s.tls_cacert = path;
    expect_file_named(&s, path, "No such file or directory");
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_cacert = NULL;
    snprintf(path, sizeof(path), "%s/no-such-dir", files.dir);
    s.tls_cacertdir = path;
    expect_file_named(&s, path, "No such file or directory");
    tls_settings(&s, srv.url, ns, sizeof(ns));
    snprintf(path, sizeof(path), "%s/no-such-key.pem", files.dir);
    s.tls_key = path;
    expect_file_named(&s, path, "No such file or directory");
}

Test(tls, a_ca_file_without_certificates_is_named) {
    char ns[96], path[256];
    snprintf(path, sizeof(path), "%s/not-a-ca.pem", files.dir);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("this is not PEM\n", f);
    fclose(f);
    eddy_settings s;
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_cacert = path;
    expect_file_named(&s, path, "not usable");
    /* A key that is not the certificate's. */
    tls_settings(&s, srv.url, ns, sizeof(ns));
    s.tls_key = files.server_key;
    expect_file_named(&s, files.server_key, "does not match");
}

Test(tls, rediss_to_a_plain_port_says_the_handshake_was_not_answered) {
    eddy_test_redis plain;
    eddy_test_redis_start(&plain, 0);
    char ns[96], url[64];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%d", plain.port);
    eddy_settings s;
    tls_settings(&s, url, ns, sizeof(ns));
    s.connect_timeout_ms = 1000;
    eddy_bus *bus = NULL;
    eddy_error err = {0};
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    eddy_bus_free(bus);
    eddy_test_redis_kill(&plain);
    cr_expect_eq(st, EDDY_ERR_TLS, "%s: %s", eddy_status_name(st), err.detail);
    cr_expect(strstr(err.detail, "did not answer the TLS handshake"), "%s", err.detail);
}

/* ---- no password in any log line or detail ------------------------------------------------- */

#define SECRET "Never-Sh0wn-pw"

static atomic_int leaked_lines, log_lines;

static void watch_log(eddy_log_level level, const char *msg, void *user) {
    (void)level;
    (void)user;
    atomic_fetch_add(&log_lines, 1);
    if (strstr(msg, SECRET))
        atomic_fetch_add(&leaked_lines, 1);
}

/* Opens a bus and an admin handle on url (which carries SECRET), publishes once if it opened;
 * every log line, at every level, and every detail must be free of the password. */
static void expect_no_secret(const char *url, const char *cacert) {
    char ns[96];
    eddy_settings s;
    tls_settings(&s, url, ns, sizeof(ns));
    s.tls_cacert = cacert;
    s.connect_timeout_ms = 1000;
    s.command_timeout_ms = 1000;
    s.log = watch_log;
    eddy_error err = {0};
    eddy_bus *bus = NULL;
    eddy_status st = eddy_bus_new(&s, NULL, 0, &bus, &err);
    cr_expect_neq(st, EDDY_OK, "%s should fail", url);
    cr_expect(!strstr(err.detail, SECRET), "the password in a detail: %s", err.detail);
    eddy_bus_free(bus);
    eddy_admin *a = NULL;
    memset(&err, 0, sizeof(err));
    cr_expect_neq(eddy_admin_open(&s, &a, &err), EDDY_OK);
    cr_expect(!strstr(err.detail, SECRET), "the password in a detail: %s", err.detail);
    eddy_admin_close(a);
}

Test(tls, the_password_is_in_no_log_line_or_detail) {
    eddy_test_redis auth;
    eddy_test_redis_start_with(&auth, 0, (const char *const[]){"--requirepass", "other", NULL});
    char url[160];
    snprintf(url, sizeof(url), "redis://user:" SECRET "@127.0.0.1:%d", auth.port);
    expect_no_secret(url, NULL); /* refused */
    snprintf(url, sizeof(url), "rediss://:" SECRET "@localhost:%d", srv.port);
    expect_no_secret(url, files.other_ca); /* wrong CA */
    snprintf(url, sizeof(url), "rediss://:" SECRET "@127.0.0.1:%d", auth.port);
    expect_no_secret(url, files.ca); /* a plain port */
    snprintf(url, sizeof(url), "redis-sentinel://:" SECRET "@127.0.0.1:%d/mymaster",
             eddy_test_free_port());
    expect_no_secret(url, NULL); /* no sentinel */
    snprintf(url, sizeof(url), "redis-cluster://:" SECRET "@127.0.0.1:%d", eddy_test_free_port());
    expect_no_secret(url, NULL); /* no node */
    eddy_test_redis_kill(&auth);
    cr_expect_gt(atomic_load(&log_lines), 0, "the failures were logged");
    cr_expect_eq(atomic_load(&leaked_lines), 0, "log lines with the password");
}

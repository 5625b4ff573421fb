/* SPDX-License-Identifier: BSD-3-Clause */
/* tls_restart: a TLS redis-server (its own CA and server certificate, made here with the openssl
 * command; the bus trusts the CA through SSL_CERT_FILE, the system store's override, so the
 * scenario needs no TLS setting of its own) is killed with SIGKILL and started again on its
 * ports under a running bus reached through rediss://. The bus must reconnect: what is published
 * after the restart is consumed (lost 0). Appendonly with appendfsync always, so that the restart
 * itself loses nothing. Needs rediss:// (issue 10 item 2). The server also listens on a plain
 * port, for the suite's own checks. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "faults.h"
#include "scenarios.h"

#define SUBJECT "faults.tls"
#define MESSAGES 200

static eddy_status consume(eddy_delivery *d, void *user) {
    fx_acks_consumed(user, eddy_event_id(eddy_delivery_event(d)));
    return EDDY_OK;
}

/* A CA and a server certificate for 127.0.0.1 in dir; false when openssl failed. */
static bool make_certs(const char *dir) {
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "cd '%s' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt "
             "-days 2 -subj /CN=eddy-faults-ca && openssl req -newkey rsa:2048 -nodes -keyout "
             "server.key -out server.csr -subj /CN=127.0.0.1 && printf "
             "'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' >ext.cnf && openssl x509 -req -in "
             "server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 "
             "-extfile ext.cnf",
             dir);
    char quiet[2100];
    snprintf(quiet, sizeof(quiet), "(%s) >/dev/null 2>&1", cmd);
    return system(quiet) == 0;
}

/* Publishes MESSAGES events "<prefix><i>", retrying each until acknowledged or wait_ms. */
static void publish_all(const driver *dr, tbus *bus, fx_acks *acks, size_t first,
                        long long wait_ms) {
    long long deadline = fx_now_ms() + wait_ms;
    for (size_t i = first; i < first + MESSAGES && fx_now_ms() < deadline;) {
        eddy_event *ev = fx_event(acks->prefix, i, "faults.tls", "x");
        eddy_error err = {0};
        eddy_status st = dr->publish(bus, SUBJECT, ev, &err);
        eddy_event_free(ev);
        if (st == EDDY_OK)
            acks->acked[i++] = 1;
        else
            fx_sleep_ms(50); /* not reconnected yet */
    }
}

void fx_tls_restart(const driver *dr) {
    static char dir[160], tls_port[16], cert[224], key[224], ca[224];
    char ns[64];
    snprintf(ns, sizeof(ns), "faults-tls-%s", dr->name);
    fx_scratch(dir, sizeof(dir), ns);
    if (!make_certs(dir)) {
        fx_fail("tls_restart: openssl could not make the certificates");
        return;
    }
    snprintf(tls_port, sizeof(tls_port), "%d", fx_free_port());
    snprintf(cert, sizeof(cert), "%s/server.crt", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(ca, sizeof(ca), "%s/ca.crt", dir);
    const char *const extra[] = {"--tls-port",
                                 tls_port,
                                 "--tls-cert-file",
                                 cert,
                                 "--tls-key-file",
                                 key,
                                 "--tls-ca-cert-file",
                                 ca,
                                 "--tls-auth-clients",
                                 "no",
                                 "--appendonly",
                                 "yes",
                                 "--appendfsync",
                                 "always",
                                 NULL};
    fx_redis r;
    fx_redis_start(&r, extra);
    setenv("SSL_CERT_FILE", ca, 1);
    char url[96];
    snprintf(url, sizeof(url), "rediss://127.0.0.1:%s", tls_port);
    static fx_acks acks;
    fx_acks_init(&acks, 2 * MESSAGES, 't');
    eddy_settings s;
    fx_settings(&s, url, ns);
    s.log_user = "tls";
    eddy_subscription_spec sp;
    fx_competing(&sp, "consume", SUBJECT, "tls", EDDY_AT_LEAST_ONCE);
    sp.handler = consume;
    sp.user = &acks;
    tbus *bus = NULL;
    eddy_error err = {0};
    if (dr->bus_new(&s, &sp, 1, &bus, &err) != EDDY_OK || dr->start(bus, &err) != EDDY_OK) {
        fx_fail("tls_restart: bus on %s: %s", url, err.detail);
        if (bus)
            dr->free(bus);
        fx_acks_free(&acks);
        fx_redis_stop(&r);
        unsetenv("SSL_CERT_FILE");
        return;
    }
    publish_all(dr, bus, &acks, 0, 30000);
    fx_redis_restart(&r);
    publish_all(dr, bus, &acks, MESSAGES, 30000);
    fx_acks_outcome o;
    fx_acks_settle(&acks, &r, ns, SUBJECT, "tls", 30000, &o);
    dr->stop(bus);
    dr->free(bus);
    printf("FIG tls_restart frontend=%s lost=%zu/%zu dup=%zu pending=%lld restarts=1\n", dr->name,
           o.lost, o.acked, o.dup, o.pending);
    FX_CHECK(o.acked == 2 * MESSAGES, "tls_restart: only %zu publishes succeeded", o.acked);
    FX_CHECK(o.lost == 0, "tls_restart: %zu acknowledged publishes never consumed", o.lost);
    FX_CHECK(o.pending == 0, "tls_restart: %lld entries still pending", o.pending);
    fx_acks_free(&acks);
    fx_redis_stop(&r);
    unsetenv("SSL_CERT_FILE");
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Test certificates and TLS redis-servers; see tls_server.h. */
#include "tls_server.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void run(const char *fmt, const char *dir) {
    char cmd[2048];
    snprintf(cmd, sizeof(cmd), "cd '%s' && (%s) >openssl.log 2>&1", dir, fmt);
    cr_assert(system(cmd) == 0, "openssl failed: %s (see %s/openssl.log)", fmt, dir);
}

#define KEY "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"

void eddy_test_tls_certs(eddy_test_tls_files *f) {
    memset(f, 0, sizeof(*f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/eddy-test-tls-XXXXXX");
    cr_assert(mkdtemp(f->dir), "mkdtemp");
    run("openssl req -x509 " KEY " -keyout ca.key -out ca.crt -days 2 -subj '/CN=eddy test CA'"
        " && openssl req -x509 " KEY " -keyout other-ca.key -out other-ca.crt -days 2"
        " -subj '/CN=eddy other CA'"
        " && printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\\n' >server.ext"
        " && openssl req " KEY " -keyout server.key -out server.csr -subj '/CN=localhost'"
        " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
        " -out server.crt -days 2 -extfile server.ext"
        " && openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
        " -out expired.crt -days 0 -extfile server.ext"
        " && openssl req " KEY " -keyout client.key -out client.csr -subj '/CN=eddy client'"
        " && openssl x509 -req -in client.csr -CA ca.crt -CAkey ca.key -CAcreateserial"
        " -out client.crt -days 2",
        f->dir);
    snprintf(f->ca, sizeof(f->ca), "%s/ca.crt", f->dir);
    snprintf(f->other_ca, sizeof(f->other_ca), "%s/other-ca.crt", f->dir);
    snprintf(f->server_cert, sizeof(f->server_cert), "%s/server.crt", f->dir);
    snprintf(f->server_key, sizeof(f->server_key), "%s/server.key", f->dir);
    snprintf(f->expired_cert, sizeof(f->expired_cert), "%s/expired.crt", f->dir);
    snprintf(f->client_cert, sizeof(f->client_cert), "%s/client.crt", f->dir);
    snprintf(f->client_key, sizeof(f->client_key), "%s/client.key", f->dir);
}

void eddy_test_tls_certs_remove(eddy_test_tls_files *f) {
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->dir);
}

static bool accepts(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(fd);
    return ok;
}

void eddy_test_tls_redis_start(eddy_test_redis *r, const eddy_test_tls_files *f, const char *cert,
                               int port) {
    for (int attempt = 0; attempt < 20; attempt++) {
        int p = port ? port : eddy_test_free_port();
        snprintf(r->dir, sizeof(r->dir), "%s/redis-%d", f->dir, p);
        char mk[256];
        snprintf(mk, sizeof(mk), "mkdir -p '%s'", r->dir);
        cr_assert(system(mk) == 0);
        pid_t pid = fork();
        cr_assert(pid >= 0);
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int devnull = open("/dev/null", O_RDWR);
            if (devnull >= 0) {
                dup2(devnull, 0);
                dup2(devnull, 1);
                dup2(devnull, 2);
            }
            char ports[16];
            snprintf(ports, sizeof(ports), "%d", p);
            const char *args[] = {"redis-server",
                                  "--bind",
                                  "127.0.0.1",
                                  "--port",
                                  "0",
                                  "--tls-port",
                                  ports,
                                  "--tls-cert-file",
                                  cert,
                                  "--tls-key-file",
                                  f->server_key,
                                  "--tls-ca-cert-file",
                                  f->ca,
                                  "--tls-auth-clients",
                                  "yes",
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--dir",
                                  r->dir,
                                  "--loglevel",
                                  "warning",
                                  "--logfile",
                                  "redis.log",
                                  NULL};
            execvp("redis-server", (char *const *)args);
            _exit(127);
        }
        for (int i = 0; i < 200; i++) {
            if (accepts(p)) {
                r->pid = pid;
                r->port = p;
                snprintf(r->url, sizeof(r->url), "rediss://localhost:%d", p);
                return;
            }
            if (waitpid(pid, NULL, WNOHANG) == pid)
                break;
            struct timespec pause = {0, 25000000};
            nanosleep(&pause, NULL);
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    cr_assert_fail("could not start a TLS redis-server");
}

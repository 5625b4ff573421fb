/* SPDX-License-Identifier: BSD-3-Clause */
/* Fake Redis servers for link tests; see fake_server.h. */
#include "fake_server.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "eddy_test.h"

void fake_listen(fake *f) {
    memset(f, 0, sizeof(*f));
    f->peer = -1;
    f->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    cr_assert(f->lfd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(bind(f->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    cr_assert_eq(listen(f->lfd, 4), 0);
    socklen_t len = sizeof(a);
    getsockname(f->lfd, (struct sockaddr *)&a, &len);
    f->port = ntohs(a.sin_port);
}

void fake_close(fake *f) {
    if (f->peer >= 0)
        close(f->peer);
    close(f->lfd);
}

void fake_step(fake *f) {
    int c = accept(f->lfd, NULL, NULL);
    if (c >= 0) {
        fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
        if (f->peer >= 0)
            close(f->peer);
        f->peer = c;
        f->accepts++;
        f->next = 0;
        f->conn_start = f->ngot;
    }
    if (f->peer < 0)
        return;
    ssize_t k = read(f->peer, f->got + f->ngot, sizeof(f->got) - 1 - f->ngot);
    if (k > 0)
        f->ngot += (size_t)k;
    f->got[f->ngot] = '\0';
    while (f->next < FAKE_STEPS && f->triggers[f->next] &&
           strstr(f->got + f->conn_start, f->triggers[f->next])) {
        const char *a = f->answers[f->next++];
        cr_assert_eq(write(f->peer, a, strlen(a)), (ssize_t)strlen(a));
    }
}

eddy_status fake_link_step(eddy__link *l, fake **fakes, size_t n, eddy_error *err) {
    eddy_status st = EDDY_OK;
    unsigned w = eddy__link_wants(l);
    struct pollfd p = {.fd = eddy__link_fd(l),
                       .events = (short)(((w & EDDY__LINK_READ) ? POLLIN : 0) |
                                         ((w & EDDY__LINK_WRITE) ? POLLOUT : 0))};
    if (w && poll(&p, 1, 10) > 0) {
        unsigned ready = ((p.revents & POLLIN) ? EDDY__LINK_READ : 0) |
                         ((p.revents & POLLOUT) ? EDDY__LINK_WRITE : 0);
        if (p.revents & (POLLERR | POLLHUP))
            ready = EDDY__LINK_READ | EDDY__LINK_WRITE;
        st = eddy__link_io(l, ready, err);
    }
    for (size_t i = 0; i < n; i++)
        fake_step(fakes[i]);
    return st;
}

eddy_status fake_until_ready(eddy__link *l, fake **fakes, size_t n, eddy_error *err) {
    eddy_status st = EDDY_OK;
    long long give_up = eddy_test_now_ms() + 20000;
    while (st == EDDY_OK && eddy__link_phase_of(l) != EDDY__LINK_READY &&
           eddy_test_now_ms() < give_up)
        st = fake_link_step(l, fakes, n, err);
    return st;
}

eddy_status fake_one_reply(eddy__link *l, fake **fakes, size_t n, redisReply **r, eddy_error *err) {
    eddy_status st;
    long long give_up = eddy_test_now_ms() + 20000;
    while ((st = eddy__link_reply(l, r, err)) == EDDY_OK && !*r && eddy_test_now_ms() < give_up)
        if ((st = fake_link_step(l, fakes, n, err)) != EDDY_OK)
            break;
    return st;
}

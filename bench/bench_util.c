/* See bench_util.h. */
#include "bench_util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0)
        return 0;
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

pid_t bench_start_redis(char *url, size_t size, int *port) {
    *port = free_port();
    pid_t pid = fork();
    if (pid == 0) {
        char p[16];
        snprintf(p, sizeof(p), "%d", *port);
        execlp("redis-server", "redis-server", "--bind", "127.0.0.1", "--port", p, "--save", "",
               "--appendonly", "no", "--loglevel", "warning", "--logfile", "/dev/null",
               (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        redisContext *c = redisConnect("127.0.0.1", *port);
        if (c && !c->err) {
            redisFree(c);
            snprintf(url, size, "redis://127.0.0.1:%d", *port);
            return pid;
        }
        if (c)
            redisFree(c);
        struct timespec pause = {0, 25000000};
        nanosleep(&pause, NULL);
    }
    kill(pid, SIGKILL);
    return 0;
}

void bench_stop_redis(pid_t pid) {
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

redisContext *bench_connect(int port) {
    redisContext *c = redisConnect("127.0.0.1", port);
    if (!c || c->err) {
        fprintf(stderr, "cannot connect to 127.0.0.1:%d\n", port);
        exit(1);
    }
    return c;
}

void bench_print(const char *name, double eddy, double hiredis) {
    printf("bench %s eddy=%.0f hiredis=%.0f ratio=%.3f\n", name, eddy, hiredis,
           hiredis > 0 ? eddy / hiredis : 0.0);
    fflush(stdout);
}

double bench_raw_consume(int port, const char *key, int n) {
    redisContext *c = bench_connect(port);
    freeReplyObject(redisCommand(c, "XGROUP CREATE %s raw 0", key));
    int got = 0;
    double t0 = bench_now();
    while (got < n) {
        redisReply *r = redisCommand(c, "XREADGROUP GROUP raw c1 COUNT 64 STREAMS %s >", key);
        if (!r || r->type != REDIS_REPLY_ARRAY)
            exit(1);
        redisReply *entries = r->element[0]->element[1];
        const char *argv[3 + 64];
        size_t lens[3 + 64];
        argv[0] = "XACK", argv[1] = key, argv[2] = "raw";
        for (int i = 0; i < 3; i++)
            lens[i] = strlen(argv[i]);
        for (size_t i = 0; i < entries->elements; i++) {
            argv[3 + i] = entries->element[i]->element[0]->str;
            lens[3 + i] = entries->element[i]->element[0]->len;
        }
        freeReplyObject(redisCommandArgv(c, 3 + (int)entries->elements, argv, lens));
        got += (int)entries->elements;
        freeReplyObject(r);
    }
    double rate = n / (bench_now() - t0);
    redisFree(c);
    return rate;
}

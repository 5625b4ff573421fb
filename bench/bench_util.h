/* Shared pieces of the benchmarks: timing, a private redis-server when no URL is given, and
 * the result line format `bench <name> eddy=<x> hiredis=<y> ratio=<x/y>`. */
#ifndef EDDY_BENCH_UTIL_H
#define EDDY_BENCH_UTIL_H

#include <hiredis/hiredis.h>
#include <sys/types.h>

double bench_now(void);
/* Starts redis-server on a free 127.0.0.1 port; writes its URL; returns its pid (0 on error). */
pid_t bench_start_redis(char *url, size_t size, int *port);
void bench_stop_redis(pid_t pid);
/* Connects to redis://127.0.0.1:port; exits on failure. */
redisContext *bench_connect(int port);
/* The foundation's raw consume: a group "raw" created at 0 on key, XREADGROUP COUNT 64 then one
 * XACK per batch, until n entries were read; returns entries per second. */
double bench_raw_consume(int port, const char *key, int n);
void bench_print(const char *name, double eddy, double hiredis);

#endif

# SPDX-License-Identifier: BSD-3-Clause
"""redis-py's side of the peer comparison (run.sh runs it beside eddy and ioredis against the
same server): one repetition of
  publish   N entries with eddy's exact fields (specversion 1.0, id ev-<i>, source /bench,
            type bench.order.placed.v1, data: 120 bytes of 'p'), XADD pipelined 256 at a time;
  consume   those N entries: XREADGROUP COUNT 256, each batch's XACK pipelined with the next read.
Usage: peer_redis.py PORT N KEY; prints `redis-py publish=<x> consume=<y>` (per second)."""
import sys
import time

import redis

BATCH = 256


def main():
    port, n, key = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    r = redis.Redis(host="127.0.0.1", port=port)
    data = b"p" * 120
    events = [{"specversion": "1.0", "id": "ev-%d" % i, "source": "/bench",
               "type": "bench.order.placed.v1", "data": data} for i in range(n)]

    t0 = time.perf_counter()
    for i in range(0, n, BATCH):
        p = r.pipeline(transaction=False)
        for fields in events[i:i + BATCH]:
            p.xadd(key, fields)
        p.execute()
    publish = n / (time.perf_counter() - t0)

    r.xgroup_create(key, "g", id="0")
    got = 0
    t0 = time.perf_counter()
    reply = r.xreadgroup("g", "c1", {key: ">"}, count=BATCH)
    while True:
        entries = reply[0][1]
        got += len(entries)
        p = r.pipeline(transaction=False)
        p.xack(key, "g", *[e[0] for e in entries])
        if got < n:
            p.xreadgroup("g", "c1", {key: ">"}, count=BATCH)
        out = p.execute()
        if got >= n:
            break
        reply = out[1]
    consume = n / (time.perf_counter() - t0)
    print("redis-py publish=%.0f consume=%.0f" % (publish, consume))


if __name__ == "__main__":
    main()

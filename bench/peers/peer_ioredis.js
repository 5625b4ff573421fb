// SPDX-License-Identifier: BSD-3-Clause
// ioredis's side of the peer comparison (run.sh runs it beside eddy and redis-py against the
// same server): one repetition of
//   publish   N entries with eddy's exact fields (specversion 1.0, id ev-<i>, source /bench,
//             type bench.order.placed.v1, data: 120 bytes of 'p'), XADD pipelined 256 at a time;
//   consume   those N entries: XREADGROUP COUNT 256, each batch's XACK pipelined with the next
//             read.
// Usage: node peer_ioredis.js PORT N KEY; prints `ioredis publish=<x> consume=<y>` (per second).
'use strict';
const Redis = require('ioredis');

const BATCH = 256;

async function main() {
  const [port, n, key] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
  const r = new Redis({ host: '127.0.0.1', port });
  const data = 'p'.repeat(120);
  const events = [];
  for (let i = 0; i < n; i++)
    events.push(['specversion', '1.0', 'id', `ev-${i}`, 'source', '/bench', 'type',
      'bench.order.placed.v1', 'data', data]);

  let t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i += BATCH) {
    const p = r.pipeline();
    for (const fields of events.slice(i, i + BATCH)) p.xadd(key, '*', ...fields);
    await p.exec();
  }
  const publish = n / (Number(process.hrtime.bigint() - t0) / 1e9);

  await r.xgroup('CREATE', key, 'g', '0');
  let got = 0;
  t0 = process.hrtime.bigint();
  let reply = await r.xreadgroup('GROUP', 'g', 'c1', 'COUNT', BATCH, 'STREAMS', key, '>');
  for (;;) {
    const entries = reply[0][1];
    got += entries.length;
    const p = r.pipeline();
    p.xack(key, 'g', ...entries.map((e) => e[0]));
    if (got < n) p.xreadgroup('GROUP', 'g', 'c1', 'COUNT', BATCH, 'STREAMS', key, '>');
    const out = await p.exec();
    if (got >= n) break;
    reply = out[1][1];
  }
  const consume = n / (Number(process.hrtime.bigint() - t0) / 1e9);
  console.log(`ioredis publish=${publish.toFixed(0)} consume=${consume.toFixed(0)}`);
  r.disconnect();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

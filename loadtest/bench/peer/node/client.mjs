// The peer's client for make bench-peer: AWS Powertools idempotency
// (makeIdempotent + CachePersistenceLayer on @redis/client) doing the same
// work as pkg/idem's Begin+Complete (fresh) or Begin on a completed key
// (replay).
//
// Protocol (shared with the Go client, see ../client.go): arguments are
// -addr host:port -c concurrency -op fresh|replay -duration seconds
// -warmup seconds -prefix string. It connects, prepares, warms up, prints
// "ready" on stdout, waits for a line on stdin, runs for the duration and
// prints one JSON line: ops, errors, seconds, p50_ms, p99_ms, cpu_s (utime +
// stime of this process from /proc/self/stat over the measured window).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { createClient } from '@redis/client';
import { IdempotencyConfig, makeIdempotent } from '@aws-lambda-powertools/idempotency';
import { CachePersistenceLayer } from '@aws-lambda-powertools/idempotency/cache';

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith('-') ? [...acc, [a.replace(/^-+/, ''), all[i + 1]]] : acc), []),
);
const addr = args.addr ?? '127.0.0.1:6425';
const conc = Number(args.c ?? 1);
const op = args.op ?? 'fresh';
const duration = Number(args.duration ?? 5) * 1000;
const warmup = Number(args.warmup ?? 1) * 1000;
const prefix = args.prefix ?? 'peer';
const replayKeys = 1024;

// The same result as the Go client stores: a small payment response.
const result = {
  status: 202,
  body: '{"id":"pay_01HZX0000000000000000000","status":"pending","amount":1000,"currency":"EUR","customer_id":"cus_1"}',
};

const client = await createClient({ url: `redis://${addr}` }).connect();
const persistenceStore = new CachePersistenceLayer({ client });
const config = new IdempotencyConfig({
  eventKeyJmesPath: 'idempotencyKey',
  expiresAfterSeconds: 24 * 3600,
  throwOnNoIdempotencyKey: true,
});
// A Lambda-like context: without one the in-progress record has no expiry
// and a concurrent duplicate takes it over as an orphan. 30 s like pkg/idem's
// default lease.
const context = { getRemainingTimeInMillis: () => 30000 };
const charge = makeIdempotent(async (event, _ctx) => result, { persistenceStore, config });

const event = (key) => ({
  idempotencyKey: key,
  merchant: 'm1',
  body: { amount: 1000, currency: 'EUR', customer_id: 'cus_1', description: 'bench' },
});

function cpuSeconds() {
  const s = readFileSync('/proc/self/stat', 'utf8');
  const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
}

let seq = 0;
const nextKey = (tag) => (op === 'fresh' ? `${prefix}-${tag}-${seq++}` : `${prefix}-replay-${seq++ % replayKeys}`);

if (op === 'replay') {
  for (let i = 0; i < replayKeys; i++) await charge(event(`${prefix}-replay-${i}`), context);
}

async function loop(tag, until, lat) {
  let ops = 0;
  let errors = 0;
  while (true) {
    const t0 = process.hrtime.bigint();
    if (t0 >= until) break;
    try {
      await charge(event(nextKey(tag)), context);
      ops++;
    } catch (e) {
      errors++;
      if (errors === 1) console.error(e);
    }
    if (lat) lat.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { ops, errors };
}

async function run(tag, ms, lat) {
  const until = process.hrtime.bigint() + BigInt(ms) * 1000000n;
  const rs = await Promise.all(Array.from({ length: conc }, () => loop(tag, until, lat)));
  return rs.reduce((a, r) => ({ ops: a.ops + r.ops, errors: a.errors + r.errors }), { ops: 0, errors: 0 });
}

await run('warm', warmup, null);
process.stdout.write('ready\n');
const rl = createInterface({ input: process.stdin });
await new Promise((resolve) => rl.once('line', resolve));
rl.close();

const lat = [];
const cpu0 = cpuSeconds();
const t0 = process.hrtime.bigint();
const r = await run('run', duration, lat);
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = cpuSeconds() - cpu0;
lat.sort((a, b) => a - b);
const q = (p) => (lat.length ? lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] : 0);
process.stdout.write(
  JSON.stringify({ ops: r.ops, errors: r.errors, seconds, p50_ms: q(0.5), p99_ms: q(0.99), cpu_s: cpu }) + '\n',
);
await client.quit();

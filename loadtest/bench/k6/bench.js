// oncepay benchmark load (k6 v1), driven by loadtest/bench/cmd/bench.
//
// Environment:
//   TARGETS   comma-separated base URLs; requests go round-robin over them
//   MODE      fresh   every request a new Idempotency-Key (a new payment)
//             replay  every request repeats one of KEYS completed payments
//                     (must answer 202 + Idempotent-Replayed): the first KEYS
//                     keys of the fresh phase named by KEYS_FROM, or, without
//                     it, KEYS payments that setup() creates
//   LOAD      rate    open model: RATE requests/s for DURATION (constant-arrival-rate)
//             vus     closed model: VUS looping clients for DURATION (saturation)
//             count   ITERATIONS requests shared by VUS clients (round-trip counting)
//   PRE_VUS   VUs allocated before an open-model run starts (default
//             max(50, RATE/10), at most 300). k6 drops an iteration when no
//             VU is free, and allocating more mid-run drops more: runs that
//             must not drop (the sustained runs) ask for RATE/2 or more.
//   MAX_VUS   the most VUs an open-model run may use (default max(400,
//             2*PRE_VUS)); the overload phase raises it, so that the
//             offered load stays independent of the answers
//   RUN       prefix of every key (unique per phase)
//   SUMMARY   path of the compact JSON summary written at the end
//
// Connections are kept alive, as real clients do. Only the requests of the
// main scenario are measured (latency, accepted, replayed, failed); the
// setup's are not.

import http from 'k6/http';
import exec from 'k6/execution';
import { Counter, Trend } from 'k6/metrics';

const targets = (__ENV.TARGETS || 'http://127.0.0.1:8080').split(',');
const mode = __ENV.MODE || 'fresh';
const load = __ENV.LOAD || 'rate';
const run = __ENV.RUN || `b${Date.now()}`;
const duration = __ENV.DURATION || '15s';
const rate = Number(__ENV.RATE || 100);
const vus = Number(__ENV.VUS || 16);
const iterations = Number(__ENV.ITERATIONS || 1000);
const keys = Number(__ENV.KEYS || 100);
const keysFrom = __ENV.KEYS_FROM || '';
const summaryPath = __ENV.SUMMARY || 'summary.json';
const preVUs = Number(__ENV.PRE_VUS || Math.min(300, Math.max(50, Math.ceil(rate / 10))));
const maxVUs = Number(__ENV.MAX_VUS || Math.max(400, 2 * preVUs));

const latency = new Trend('latency', true);
const accepted = new Counter('accepted'); // 202, a new payment
const replayed = new Counter('replayed'); // 202 with Idempotent-Replayed: true
const failed = new Counter('failed'); // anything else, transport errors included
// refusals: 503 or 429, the answers that shed load; their latency, and how
// many came without Retry-After
const refusal = new Trend('refusal_latency', true);
const refused = new Counter('refused');
const refusedBare = new Counter('refused_no_retry_after');
// failed, by class: 0 (transport error or timeout), 409, 4xx, 503, 5xx
const failedBy = {
  0: new Counter('failed_0'), 409: new Counter('failed_409'), '4xx': new Counter('failed_4xx'),
  503: new Counter('failed_503'), '5xx': new Counter('failed_5xx'),
};
function failClass(status) {
  if (status === 0 || status === 409 || status === 503) return status;
  return status >= 500 ? '5xx' : '4xx';
}

const params = (key) => ({
  headers: {
    Authorization: 'Bearer sk_test_merchant_a_0123456789',
    'Content-Type': 'application/json',
    'Idempotency-Key': key,
  },
  timeout: '10s',
});
const body = JSON.stringify({ amount: 1250, currency: 'EUR', customer_id: 'cus_42', description: 'order 42' });

function scenario() {
  switch (load) {
    case 'vus':
      return { executor: 'constant-vus', vus, duration, gracefulStop: '2s' };
    case 'count':
      return { executor: 'shared-iterations', vus, iterations, maxDuration: '120s', gracefulStop: '2s' };
    default:
      return {
        executor: 'constant-arrival-rate', rate, timeUnit: '1s', duration,
        // enough VUs up front: allocating them mid-run drops iterations
        preAllocatedVUs: preVUs, maxVUs, gracefulStop: '2s',
      };
  }
}

export const options = {
  scenarios: { main: scenario() },
  summaryTrendStats: ['avg', 'p(50)', 'p(90)', 'p(99)', 'max'],
  discardResponseBodies: true,
  setupTimeout: '120s',
};

export function setup() {
  if (mode !== 'replay') return { keys: [] };
  if (keysFrom) return { keys: Array.from({ length: keys }, (_, i) => `${keysFrom}-${i}`) };
  const made = [];
  for (let i = 0; i < keys; i++) {
    const key = `${run}-r${i}`;
    const res = http.post(`${targets[i % targets.length]}/v1/payments`, body, params(key));
    if (res.status !== 202) throw new Error(`setup: creating ${key} answered ${res.status}`);
    made.push(key);
  }
  return { keys: made };
}

export default function (data) {
  const n = exec.scenario.iterationInTest;
  const target = targets[n % targets.length];
  const key = mode === 'replay' ? data.keys[n % data.keys.length] : `${run}-${n}`;
  const res = http.post(`${target}/v1/payments`, body, params(key));
  latency.add(res.timings.duration);
  if (res.status === 503 || res.status === 429) {
    refused.add(1);
    refusal.add(res.timings.duration);
    if (!res.headers['Retry-After']) refusedBare.add(1);
  }
  if (res.status !== 202) {
    failed.add(1);
    failedBy[failClass(res.status)].add(1);
  } else if (res.headers['Idempotent-Replayed'] === 'true') {
    replayed.add(1);
  } else {
    accepted.add(1);
  }
}

function count(data, name) {
  const m = data.metrics[name];
  return m ? m.values.count : 0;
}

export function handleSummary(data) {
  const lat = data.metrics.latency ? data.metrics.latency.values : {};
  const ref = data.metrics.refusal_latency ? data.metrics.refusal_latency.values : {};
  const out = {
    mode, load, targets, rate, vus,
    duration_s: load === 'count' ? null : Number(duration.replace(/s$/, '')),
    accepted: count(data, 'accepted'),
    replayed: count(data, 'replayed'),
    failed: count(data, 'failed'),
    failed_by: Object.fromEntries(Object.keys(failedBy).map((k) => [k, count(data, `failed_${k}`)]).filter(([, n]) => n > 0)),
    dropped: count(data, 'dropped_iterations'),
    lat_avg_ms: lat.avg || 0,
    lat_p50_ms: lat['p(50)'] || 0,
    lat_p90_ms: lat['p(90)'] || 0,
    lat_p99_ms: lat['p(99)'] || 0,
    lat_max_ms: lat.max || 0,
    refused: count(data, 'refused'),
    refused_p99_ms: ref['p(99)'] || 0,
    refused_no_retry_after: count(data, 'refused_no_retry_after'),
    max_vus: data.metrics.vus_max ? data.metrics.vus_max.values.max : 0,
  };
  return { [summaryPath]: JSON.stringify(out) + '\n' };
}

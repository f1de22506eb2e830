// oncepay load and fault test (k6 v1).
//
// Scenarios, all at a constant arrival rate for DURATION:
//   steady         RATE payments/s across both api replicas; REPLAY_RATIO of
//                  them are sent again on purpose and must replay byte-identically
//   burst          BURST_SIZE concurrent duplicates of one request (http.batch)
//   mismatch       a key reused with a changed amount must get 422
//   crossmerchant  one key string used by two merchants: two payments
//   faults         (FAULTS=1) follows the fault driver's schedule: kills,
//                  RabbitMQ and Redis restarts, a Redis FLUSHALL, ...; with
//                  FAULT_PLAN=matrix, every fault kind once
//
// Every HTTP attempt is logged as a JSON line (see lib/client.js); run with
// --console-output=<file> --log-format=json so that cmd/verify can read them.
// The runner is loadtest/run; see docs/demo.md.

import http from 'k6/http';
import { check, sleep } from 'k6';
import exec from 'k6/execution';
import { Counter, Rate, Trend } from 'k6/metrics';
import { config } from './lib/config.js';
import { pay, payConcurrently } from './lib/client.js';
import { mulberry32, seedOf } from './lib/rand.js';

const completed = new Rate('payment_completed'); // a payment the client wanted got a 2xx
const gaveUp = new Counter('payments_gave_up');
const identical = new Rate('replay_identical'); // answers to one key are byte-identical
const latency = new Trend('payment_latency', true); // first attempt to final answer
const faultsApplied = new Counter('faults_applied');
const faultsMidRequest = new Counter('faults_mid_request');
const faultsFailed = new Counter('faults_failed');

const D = config.duration;
const grace = '90s'; // let requests in flight finish their retries after the load stops

// steadyVUs is how many clients the steady scenario starts with. k6 drops
// an iteration when no client is free and starts another meanwhile, so
// there must be enough for the slowest moments: with faults a logical
// request, retries included, takes up to a few seconds while a pod or the
// broker restarts (on kind 40 of 2,234 were dropped with one client per
// payment/s), hence four per payment/s there.
const steadyVUs = Math.max(20, config.rate * (config.faults ? 4 : 1));

function scenarios() {
  const s = {
    steady: {
      executor: 'constant-arrival-rate', exec: 'steady', rate: config.rate, timeUnit: '1s', duration: D,
      preAllocatedVUs: steadyVUs, maxVUs: Math.max(200, config.rate * 12), gracefulStop: grace,
    },
    burst: {
      executor: 'constant-arrival-rate', exec: 'burst', rate: 1, timeUnit: '2s', duration: D,
      preAllocatedVUs: 2, maxVUs: 30, gracefulStop: grace,
    },
    mismatch: {
      executor: 'constant-arrival-rate', exec: 'mismatch', rate: 1, timeUnit: '3s', duration: D,
      preAllocatedVUs: 2, maxVUs: 30, gracefulStop: grace,
    },
    crossmerchant: {
      executor: 'constant-arrival-rate', exec: 'crossMerchant', rate: 1, timeUnit: '3s', duration: D,
      preAllocatedVUs: 2, maxVUs: 30, gracefulStop: grace,
    },
  };
  if (config.faults) {
    s.faults = {
      executor: 'per-vu-iterations', exec: 'faults', vus: 1, iterations: 1,
      maxDuration: `${Math.ceil(config.durationSeconds) + 300}s`, gracefulStop: '0s',
    };
  }
  return s;
}

export const options = {
  scenarios: scenarios(),
  // One connection per attempt. Go's HTTP client, under k6, silently
  // re-sends a request that carries an Idempotency-Key when a REUSED
  // connection breaks, which would hide the cut-off from the client count.
  noConnectionReuse: true,
  thresholds: {
    replay_identical: ['rate==1'],
    payment_completed: ['rate>0.99'],
    checks: ['rate>0.99'],
    dropped_iterations: [`count<${Math.max(10, Math.ceil(config.rate * config.durationSeconds * 0.01))}`],
  },
  summaryTrendStats: ['avg', 'p(50)', 'p(95)', 'p(99)', 'max'],
};

// setup fixes the run id (the prefix of every key) and fetches the fault
// schedule.
export function setup() {
  const runID = config.runID || `r${Date.now().toString(36)}`;
  let steps = [];
  if (config.faults) {
    const q = `duration=${config.durationSeconds}s&seed=${config.seed}` + (config.killEvery ? `&kill_every=${config.killEvery}` : '')
      + (config.faultPlan ? `&plan=${config.faultPlan}` : '');
    const res = http.get(`${config.faultdURL}/v1/schedule?${q}`);
    if (res.status !== 200) {
      throw new Error(`fault driver at ${config.faultdURL}: ${res.status} ${res.error || res.body}`);
    }
    steps = res.json('steps');
  }
  return { runID, steps };
}

function merchantOf(i) {
  return config.merchants[i % config.merchants.length];
}

function request(scenario, merchant, key, amount, customer, note) {
  return {
    scenario, merchant, key, amount,
    body: JSON.stringify({ amount, currency: 'EUR', customer_id: customer, description: note }),
  };
}

// amountOf draws an amount in minor units; about 2% are exactly 402, which
// the psp declines (the payment ends failed, with no charge).
function amountOf(rnd) {
  return rnd() < 0.02 ? 402 : 100 + Math.floor(rnd() * 99900);
}

// customerOf: about 2% start with "decline", which the psp declines too.
function customerOf(rnd, i) {
  return rnd() < 0.02 ? `decline_cus_${i}` : `cus_${i % 997}`;
}

// finish counts a payment the client wanted; timed ones (steady) also feed
// payment_latency.
function finish(r, timed = false) {
  completed.add(r.outcome === 'ok');
  if (r.outcome === 'gave_up') gaveUp.add(1);
  if (timed && r.outcome === 'ok') latency.add(r.ms);
}

export function steady(data) {
  const i = exec.scenario.iterationInTest;
  const rnd = mulberry32(seedOf(config.seed, 'steady', i));
  const req = request('steady', merchantOf(i), `${data.runID}-s-${i}`, amountOf(rnd), customerOf(rnd, i), `k6 steady ${i}`);
  const r = pay(req, rnd, { replica: i });
  finish(r, true);
  check(r.res, { 'steady: 202 for a new payment': () => r.outcome !== 'ok' || r.res.status === 202 });
  if (r.outcome === 'ok' && rnd() < config.replayRatio) {
    const again = pay(req, rnd, { replica: i + 1 });
    if (again.outcome === 'ok') {
      const same = again.rec.body_sha256 === r.rec.body_sha256;
      identical.add(same);
      check(again.res, {
        'replay: byte-identical body': () => same,
        'replay: same status': () => again.res.status === r.res.status,
        'replay: Idempotent-Replayed: true': () => again.rec.replayed === true,
      });
    }
  }
}

export function burst(data) {
  const i = exec.scenario.iterationInTest;
  const rnd = mulberry32(seedOf(config.seed, 'burst', i));
  const req = request('burst', merchantOf(i), `${data.runID}-b-${i}`, amountOf(rnd), customerOf(rnd, i), `k6 burst ${i}`);
  const results = payConcurrently(req, config.burstSize, rnd);
  results.forEach((r) => finish(r));
  const ok = results.filter((r) => r.outcome === 'ok');
  if (ok.length > 1) {
    const same = ok.every((r) => r.rec.body_sha256 === ok[0].rec.body_sha256);
    identical.add(same);
    check(null, { 'burst: every answer byte-identical': () => same });
  }
  check(null, {
    'burst: at most one answer not flagged as a replay': () => ok.filter((r) => !r.rec.replayed).length <= 1,
  });
}

export function mismatch(data) {
  const i = exec.scenario.iterationInTest;
  const rnd = mulberry32(seedOf(config.seed, 'mismatch', i));
  const key = `${data.runID}-m-${i}`;
  const m = merchantOf(i);
  const first = pay(request('mismatch', m, key, amountOf(rnd), `cus_${i}`, `k6 mismatch ${i}`), rnd, { replica: i });
  finish(first);
  if (first.outcome !== 'ok') return;
  const changed = request('mismatch', m, key, first.rec.amount + 1, `cus_${i}`, `k6 mismatch ${i}`);
  const second = pay(changed, rnd, { replica: i + 1 });
  check(second.res, { 'mismatch: reused key with another payload gets 422': () => second.res.status === 422 });
}

export function crossMerchant(data) {
  const i = exec.scenario.iterationInTest;
  const rnd = mulberry32(seedOf(config.seed, 'crossmerchant', i));
  const key = `${data.runID}-x-${i}`;
  const amount = amountOf(rnd);
  const results = config.merchants.slice(0, 2).map((m, j) =>
    pay(request('crossmerchant', m, key, amount, `cus_${i}`, `k6 crossmerchant ${i}`), rnd, { replica: i + j }));
  results.forEach((r) => finish(r));
  if (results.length === 2 && results.every((r) => r.outcome === 'ok')) {
    check(null, { 'crossmerchant: one key, two merchants, two payments': () => results[0].rec.id !== results[1].rec.id });
  }
}

// faults follows the schedule from setup: at each step's offset from the
// scenario start it asks the fault driver to apply the fault. Requests are
// asynchronous, so a slow fault (a RabbitMQ restart takes seconds) does not
// hold back the next one.
export async function faults(data) {
  const t0 = exec.scenario.startTime;
  const pending = [];
  for (const step of data.steps) {
    const wait = t0 + step.at_ms - Date.now();
    if (wait > 0) sleep(wait / 1000);
    pending.push(
      http.asyncRequest('POST', `${config.faultdURL}/v1/faults`, JSON.stringify({ kind: step.kind, action: step.action, target: step.target, for_ms: step.for_ms }), {
        headers: { 'Content-Type': 'application/json' }, timeout: '300s', tags: { name: 'fault' },
      }).then((res) => {
        if (res.status !== 200) {
          faultsFailed.add(1);
          console.warn(`fault ${step.action} ${step.target} failed: ${res.status} ${res.error || res.body}`);
          return;
        }
        faultsApplied.add(1);
        if (res.json('mid_request') === true) faultsMidRequest.add(1);
      }),
    );
  }
  await Promise.all(pending);
}

function metric(data, name, field) {
  const m = data.metrics[name];
  return m && m.values[field] !== undefined ? m.values[field] : 0;
}

// handleSummary writes a compact JSON summary for cmd/verify and a few
// lines to stdout.
export function handleSummary(data) {
  const thresholds = {};
  for (const [name, m] of Object.entries(data.metrics)) {
    for (const [expr, t] of Object.entries(m.thresholds || {})) {
      thresholds[`${name}: ${expr}`] = t.ok;
    }
  }
  const summary = {
    run_id: data.setup_data ? data.setup_data.runID : '',
    duration: config.duration,
    rate: config.rate,
    faults: config.faults,
    http_reqs: metric(data, 'http_reqs', 'count'),
    http_req_duration_p95_ms: metric(data, 'http_req_duration', 'p(95)'),
    payment_latency_p95_ms: metric(data, 'payment_latency', 'p(95)'),
    payment_completed_rate: metric(data, 'payment_completed', 'rate'),
    payments_gave_up: metric(data, 'payments_gave_up', 'count'),
    attempts_cut_off: metric(data, 'attempts_cut_off', 'count'),
    attempts_refused: metric(data, 'attempts_refused', 'count'),
    retries: metric(data, 'retries', 'count'),
    dropped_iterations: metric(data, 'dropped_iterations', 'count'),
    checks_rate: metric(data, 'checks', 'rate'),
    faults_applied: metric(data, 'faults_applied', 'count'),
    faults_mid_request: metric(data, 'faults_mid_request', 'count'),
    thresholds,
  };
  const failed = Object.entries(thresholds).filter(([, ok]) => !ok).map(([k]) => k);
  const lines = [
    `k6: ${summary.http_reqs} HTTP requests, ${summary.retries} retries, ${summary.attempts_cut_off} cut off in flight, ` +
      `${summary.attempts_refused} refused, payment p95 ${Math.round(summary.payment_latency_p95_ms)} ms, ` +
      `${summary.dropped_iterations} dropped iterations, checks ${(summary.checks_rate * 100).toFixed(2)}%`,
    failed.length === 0 ? 'k6: all thresholds passed' : `k6: thresholds FAILED: ${failed.join('; ')}`,
  ];
  return {
    stdout: `\n${lines.join('\n')}\n`,
    [config.summaryPath]: JSON.stringify(summary, null, 2),
  };
}

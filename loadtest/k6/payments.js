// oncepay load and fault test (k6 v1).
//
// Scenarios, all at a constant arrival rate for DURATION:
//   steady         RATE payments/s across both api replicas; REPLAY_RATIO of
//                  them are sent again on purpose and must replay byte-identically;
//                  REUSE_RATIO of them reuse the key (see reuse);
//                  AMBIGUOUS_REUSE_RATIO reuse it with another payload right
//                  after an attempt with an unknown outcome (see steady)
//   burst          BURST_SIZE concurrent duplicates of one request (http.batch)
//   race           one key sent by RACE_SIZE clients (VUs), at overlapping or
//                  at different times
//   mismatch       a key reused with a changed amount must get 422, then the
//                  original's retry must replay
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
import { fingerprint, pay, payConcurrently } from './lib/client.js';
import { mulberry32, seedOf } from './lib/rand.js';
import { startAt } from './lib/schedule.js';

const completed = new Rate('payment_completed'); // a payment the client wanted got a 2xx
const gaveUp = new Counter('payments_gave_up');
const identical = new Rate('replay_identical'); // answers to one key are byte-identical
const latency = new Trend('payment_latency', true); // first attempt to final answer
const faultsApplied = new Counter('faults_applied');
const faultsMidRequest = new Counter('faults_mid_request');
const faultsFailed = new Counter('faults_failed');
const reusedAfterAmbiguous = new Counter('keys_reused_after_ambiguous');

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
    race: {
      executor: 'constant-arrival-rate', exec: 'race', rate: config.raceSize, timeUnit: '1s', duration: D,
      preAllocatedVUs: 4 * config.raceSize, maxVUs: 60, gracefulStop: grace,
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
  // The thresholds are the client's side of the contract; a crossed one
  // fails the run (cmd/verify). Every check states the contract exactly
  // (a 503 or 429 with Retry-After is a documented answer, a wrong replay
  // is not), so none may fail. Payments the client wanted complete within
  // its retry budget, but for the few a fault outlasts. Dropped iterations
  // are not the service's: k6 drops one when all its VUs are busy, which
  // slow answers during a fault cause; they are reported, and invariant 8
  // judges recovery.
  thresholds: {
    replay_identical: ['rate==1'],
    payment_completed: ['rate>0.99'],
    checks: ['rate==1'],
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

export function merchantOf(i) {
  return config.merchants[i % config.merchants.length];
}

// request is one payment request; its body is canonical JSON (keys sorted,
// no white space), so fp is the api's fingerprint of it.
export function request(scenario, merchant, key, amount, customer, note) {
  const body = JSON.stringify({ amount, currency: 'EUR', customer_id: customer, description: note });
  return { scenario, merchant, key, amount, body, fp: fingerprint(body) };
}

// reused is request req with another payload (amount + 1) under its key.
function reused(req) {
  const p = JSON.parse(req.body);
  return request(req.scenario, req.merchant, req.key, req.amount + 1, p.customer_id, p.description);
}

// reuse is the key-reuse pattern, after req was answered with first: the
// same key with another payload must get 422, then the original's retry
// must replay first byte for byte. Right after a loss of Redis's keys this
// is what shows a key repaired to the later payload (a poisoned key).
function reuse(req, first, rnd, replica) {
  const second = pay(reused(req), rnd, { replica: replica + 1 });
  check(second.res, {
    'reuse: another payload on a used key gets 422': () => second.outcome === 'gave_up' || second.res.status === 422,
  });
  const again = pay(req, rnd, { replica: replica + 2 });
  const same = again.outcome === 'ok' && again.rec.body_sha256 === first.rec.body_sha256;
  if (again.outcome === 'ok') identical.add(same);
  check(again.res, {
    "reuse: the original's retry replays": () => again.outcome === 'gave_up' || (same && again.rec.replayed === true),
  });
}

// amountOf draws an amount in minor units; about 2% are exactly 402, which
// the psp declines (the payment ends failed, with no charge).
export function amountOf(rnd) {
  return rnd() < 0.02 ? 402 : 100 + Math.floor(rnd() * 99900);
}

// customerOf: about 2% start with "decline", which the psp declines too.
export function customerOf(rnd, i) {
  return rnd() < 0.02 ? `decline_cus_${i}` : `cus_${i % 997}`;
}

// finish counts a payment the client wanted; timed ones (steady) also feed
// payment_latency.
function finish(r, timed = false) {
  completed.add(r.outcome === 'ok');
  if (r.outcome === 'gave_up') gaveUp.add(1);
  if (timed && r.outcome === 'ok') latency.add(r.ms);
}

// steadyRequest is steady iteration i's request, whether it reuses its key
// afterwards and whether it reuses it after an ambiguous attempt; all follow
// from the seed and i alone.
export function steadyRequest(runID, i) {
  const rnd = mulberry32(seedOf(config.seed, 'steady', i));
  const req = request('steady', merchantOf(i), `${runID}-s-${i}`, amountOf(rnd), customerOf(rnd, i), `k6 steady ${i}`);
  const reuseKey = mulberry32(seedOf(config.seed, 'reuse', i))() < config.reuseRatio;
  const reuseAmbiguous = mulberry32(seedOf(config.seed, 'reuse-ambiguous', i))() < config.ambiguousReuseRatio;
  return { req, rnd, reuseKey, reuseAmbiguous };
}

// steady sends one payment. If it reuses its key after an ambiguous
// attempt, another payload goes out with the key right after the first
// attempt whose outcome the client cannot know, before that attempt's
// retry: whichever payload the service accepted first owns the key. If the
// first took effect, the other gets 409 or 422; if it took none (its
// holder died before committing), its claim is taken over and the other
// may get 2xx, after which the original's retry gets 422. Invariant 7
// checks every such history against the rows; here, only that the key did
// not answer 2xx to both.
export function steady(data) {
  const i = exec.scenario.iterationInTest;
  const { req, rnd, reuseKey, reuseAmbiguous } = steadyRequest(data.runID, i);
  let other = null;
  const opts = { replica: i };
  if (reuseAmbiguous) {
    opts.onAmbiguous = () => {
      other = pay(reused(req), rnd, { replica: i + 1 });
      reusedAfterAmbiguous.add(1);
    };
  }
  const r = pay(req, rnd, opts);
  if (other === null) {
    finish(r, true);
  } else {
    // the key may have gone to the other payload: a 422 is the answer then
    if (r.outcome !== 'rejected') finish(r);
    check(null, {
      'ambiguous reuse: one key answers 2xx to one payload only': () => !(r.outcome === 'ok' && other.outcome === 'ok'),
    });
  }
  check(r.res, { 'steady: 202 for a new payment': () => r.outcome !== 'ok' || r.res.status === 202 });
  if (r.outcome === 'ok' && reuseKey) {
    reuse(req, r, rnd, i);
    return;
  }
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

// raceRequest is race iteration i's request and when it is sent (ms after
// the scenario start). Iterations come in groups of RACE_SIZE, one key per
// group, each iteration on its own VU: half the groups send within 20 ms of
// each other (overlapping), the others 0.7 s apart (one after another).
export function raceRequest(runID, i) {
  const size = config.raceSize;
  const g = Math.floor(i / size);
  const j = i % size;
  const rnd = mulberry32(seedOf(config.seed, 'race', g));
  const req = request('race', merchantOf(g), `${runID}-c-${g}`, amountOf(rnd), customerOf(rnd, g), `k6 race ${g}`);
  const jitter = mulberry32(seedOf(config.seed, 'race', g, j));
  const overlap = rnd() < 0.5;
  const atMs = ((g + 1) * size - 1) * (1000 / size) + (overlap ? jitter() * 20 : j * 700 + jitter() * 200);
  return { req, rnd: jitter, atMs, replica: j };
}

export function race(data) {
  const { req, rnd, atMs, replica } = raceRequest(data.runID, exec.scenario.iterationInTest);
  const wait = exec.scenario.startTime + atMs - Date.now();
  if (wait > 0) sleep(wait / 1000);
  finish(pay(req, rnd, { replica }));
}

export function mismatch(data) {
  const i = exec.scenario.iterationInTest;
  const rnd = mulberry32(seedOf(config.seed, 'mismatch', i));
  const req = request('mismatch', merchantOf(i), `${data.runID}-m-${i}`, amountOf(rnd), `cus_${i}`, `k6 mismatch ${i}`);
  const first = pay(req, rnd, { replica: i });
  finish(first);
  if (first.outcome !== 'ok') return;
  reuse(req, first, rnd, i);
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
// hold back the next one, but for the fault matrix (FAULT_PLAN=matrix),
// whose faults are judged one by one: there a step waits for the one before
// it to return and settle (lib/schedule.js).
export async function faults(data) {
  const t0 = exec.scenario.startTime;
  const sequential = config.faultPlan === 'matrix';
  const pending = [];
  let prevDone = null;
  for (let i = 0; i < data.steps.length; i++) {
    const step = data.steps[i];
    if (sequential && i > 0) {
      await pending[i - 1];
      prevDone = Date.now();
    }
    const wait = startAt(data.steps, i, t0, prevDone, sequential) - Date.now();
    if (wait > 0) sleep(wait / 1000);
    pending.push(
      http.asyncRequest('POST', `${config.faultdURL}/v1/faults`, JSON.stringify({ kind: step.kind, action: step.action, target: step.target, for_ms: step.for_ms, delay_ms: step.delay_ms }), {
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
    keys_reused_after_ambiguous: metric(data, 'keys_reused_after_ambiguous', 'count'),
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

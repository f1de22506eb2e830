// A well-behaved payment client: it retries with the SAME idempotency key on
// transport errors, timeouts, 409 (in flight), 429 (rate limited) and 5xx,
// bounded by a number of attempts and a time budget, with exponential
// backoff and jitter, honouring Retry-After (409, 429, 503), and moving to
// the next api replica on every retry.
//
// Every attempt is written as one JSON line through console.log (k6
// --console-output puts them in a file); loadtest/record parses them.

import http from 'k6/http';
import { check, sleep } from 'k6';
import crypto from 'k6/crypto';
import exec from 'k6/execution';
import { Counter } from 'k6/metrics';
import { config } from './config.js';

export const metrics = {
  cutOff: new Counter('attempts_cut_off'),
  refused: new Counter('attempts_refused'),
  timedOut: new Counter('attempts_timed_out'),
  retries: new Counter('retries'),
};

// k6 error codes (lib/netext/httpext/error_codes.go in k6 v1.8):
// 1050 request timeout; 1200 generic TCP error, 1201 broken pipe on write,
// 1202 unknown errno on write/read, 1220 reset by peer: the request was sent
// (or being sent) when the connection broke. 1210-1213 are dial errors:
// nothing was sent. 1000 is the generic code; a bare "EOF" there means the
// server closed the connection before answering.
const CUT_OFF = new Set([1200, 1201, 1202, 1220]);
const DIAL = new Set([1210, 1211, 1212, 1213]);

// classify names how an attempt ended; see loadtest/record.Class. An HTTP
// answer has a status (k6 also sets error_code 1000+status for 4xx/5xx); a
// transport error has status 0.
export function classify(res) {
  if (res.status === 0) {
    if (res.error_code === 1050) return 'timeout';
    if (DIAL.has(res.error_code)) return 'refused';
    if (CUT_OFF.has(res.error_code)) return 'cut_off';
    if (res.error_code === 1000 && /EOF|connection reset|broken pipe|transport connection broken|server closed/i.test(res.error)) {
      return 'cut_off';
    }
    return 'transport';
  }
  const s = res.status;
  if (s >= 200 && s < 300) return 'ok';
  if (s === 409) return 'conflict';
  if (s === 422) return 'mismatch';
  if (s === 503) return 'unavailable';
  if (s >= 500) return 'server_error';
  if (s >= 400) return 'client_error';
  return 'transport';
}

const RETRYABLE = new Set(['cut_off', 'refused', 'timeout', 'transport', 'conflict', 'unavailable', 'server_error']);

// AMBIGUOUS are the classes whose attempt may or may not have taken effect
// (the history model's ambiguous answers).
export const AMBIGUOUS = new Set(['cut_off', 'timeout', 'transport', 'unavailable', 'server_error']);

// retryable: an answer that retrying with the same key can change. A 429
// (client_error by class) consumed nothing: it is retried after its
// Retry-After like a 409 or a 503.
function retryable(a) {
  return RETRYABLE.has(a.cls) || a.res.status === 429;
}

function target(url) {
  return url.replace(/^https?:\/\//, '').replace(/\/.*$/, '');
}

// backoffMs is the pause before attempt n+1: exponential from 100 ms, capped
// at 3 s, with equal jitter; at least what Retry-After asks (+ up to 250 ms).
export function backoffMs(n, retryAfter, rnd) {
  const exp = Math.min(3000, 100 * 2 ** (n - 1));
  let d = exp / 2 + rnd() * (exp / 2);
  const ra = Number(retryAfter);
  if (retryAfter !== undefined && retryAfter !== '' && Number.isFinite(ra) && ra >= 0) {
    d = Math.max(d, ra * 1000 + rnd() * 250);
  }
  return d;
}

// record writes one attempt line.
function record(rec) {
  console.log(JSON.stringify(rec));
}

// fingerprint is the payload's fingerprint as the api computes it
// (idem.Fingerprint): SHA-256 of "POST\n/v1/payments\n" and the body, which
// request() writes canonically (keys sorted, no white space, ASCII).
export function fingerprint(body) {
  return crypto.sha256(`POST\n/v1/payments\n${body}`, 'hex');
}

// attemptRecord builds the record of one attempt from its response. started
// and ended are Date.now() before the request and after its answer (k6's
// duration leaves out the connection set-up); vu, iter and copy name the
// client that sent it (copy: its place in an http.batch).
export function attemptRecord(req, n, url, res, cls, started, ended, copy = 0) {
  const rec = {
    kind: 'attempt',
    ts: started,
    end: ended,
    scenario: req.scenario,
    merchant: req.merchant.id,
    key: req.key,
    amount: req.amount,
    fp: req.fp,
    vu: exec.vu.idInTest,
    iter: exec.scenario.iterationInTest,
    copy,
    n,
    target: target(url),
    status: res.status,
    class: cls,
    duration_ms: res.timings ? res.timings.duration : 0,
  };
  if (res.status === 0) {
    rec.error_code = res.error_code;
    rec.error = res.error;
  }
  if (cls === 'ok') {
    rec.body_sha256 = crypto.sha256(res.body || '', 'hex');
    try {
      rec.id = res.json('id');
    } catch (e) {
      rec.id = '';
    }
    rec.replayed = res.headers['Idempotent-Replayed'] === 'true';
  }
  if (cls === 'cut_off') metrics.cutOff.add(1);
  if (cls === 'refused') metrics.refused.add(1);
  if (cls === 'timeout') metrics.timedOut.add(1);
  if (n > 1) metrics.retries.add(1);
  return rec;
}

export function params(req) {
  return {
    headers: {
      Authorization: `Bearer ${req.merchant.key}`,
      'Idempotency-Key': req.key,
      'Content-Type': 'application/json',
    },
    timeout: config.requestTimeout,
    tags: { scenario_req: req.scenario },
    responseCallback: http.expectedStatuses({ min: 200, max: 299 }, 409, 422),
  };
}

// url returns the payments URL on replica i (modulo the replicas).
export function url(i) {
  const bases = config.baseURLs;
  return `${bases[((i % bases.length) + bases.length) % bases.length]}/v1/payments`;
}

// send makes attempt n of req on replica (replica + n - 1): every retry goes
// to the next replica, as a load balancer skipping a dead one would.
export function send(req, replica, n) {
  const u = url(replica + n - 1);
  const started = Date.now();
  const res = http.post(u, req.body, params(req));
  return { u, started, ended: Date.now(), res, cls: classify(res) };
}

// decide records attempt n of req (a = what send returned) and says what
// comes next: {outcome} when the request is over (ok, rejected, gave_up),
// else {pause} before the next attempt. began is when the request started.
// DOCUMENTED are the statuses a valid payment request may get (docs/api.md),
// a 503 during a failover included; anything else (a 500, a 400 for a valid
// body) is a bug worth a failed check. So is a refusal (409, 429, 503)
// without the Retry-After that tells the client when to come back.
const DOCUMENTED = new Set([202, 409, 422, 429, 503]);
const REFUSALS = new Set([409, 429, 503]);

// retryAfterOK: a refusal's Retry-After is a whole number of seconds.
export function retryAfterOK(v) {
  return typeof v === 'string' && /^[0-9]+$/.test(v.trim());
}

function decide(req, n, a, began, rnd) {
  const rec = attemptRecord(req, n, a.u, a.res, a.cls, a.started, a.ended, a.copy || 0);
  if (a.res.status !== 0) {
    check(a.res, { 'status as documented (202, 409, 422, 429, 503)': (r) => DOCUMENTED.has(r.status) });
  }
  if (REFUSALS.has(a.res.status)) {
    check(a.res, { 'refusal carries Retry-After (409, 429, 503)': (r) => retryAfterOK(r.headers['Retry-After']) });
  }
  let outcome = null;
  let pause = 0;
  if (a.cls === 'ok') {
    outcome = 'ok';
  } else if (!retryable(a)) {
    outcome = 'rejected';
  } else {
    pause = backoffMs(n, a.res.headers ? a.res.headers['Retry-After'] : undefined, rnd);
    if (n >= config.maxAttempts || Date.now() + pause - began > config.retryBudgetMs) {
      outcome = 'gave_up';
    }
  }
  if (outcome !== null) {
    rec.final = true;
    rec.outcome = outcome;
  }
  record(rec);
  return { outcome, pause, rec };
}

// pay sends req ({scenario, merchant: {id, key}, key, amount, body, fp}) until it
// gets an answer that retrying cannot change, or the budget runs out, and
// returns {outcome: ok|rejected|gave_up, res, cls, attempts, ms, rec}.
// rnd is the request's seeded random generator (for jitter); opts.replica
// picks the first replica. opts.onAmbiguous, if set, is called once, right
// after the first attempt whose outcome the client cannot know (cut off,
// timed out, 5xx), before the retry.
export function pay(req, rnd, opts = {}) {
  const replica = opts.replica || 0;
  const began = Date.now();
  let onAmbiguous = opts.onAmbiguous;
  let a = send(req, replica, 1);
  for (let n = 1; ; n++) {
    const d = decide(req, n, a, began, rnd);
    if (onAmbiguous && AMBIGUOUS.has(a.cls)) {
      const f = onAmbiguous;
      onAmbiguous = null;
      f();
    }
    if (d.outcome !== null) {
      return { outcome: d.outcome, res: a.res, cls: a.cls, attempts: n, ms: Date.now() - began, rec: d.rec };
    }
    sleep(d.pause / 1000);
    a = send(req, replica, n + 1);
  }
}

// payConcurrently sends count copies of req at once (http.batch), as a
// client whose duplicates race each other, copy j starting on replica j.
// Copies that must retry do so together, in rounds, after the longest pause
// any of them asks for. It returns one result per copy, as pay does.
export function payConcurrently(req, count, rnd) {
  const began = Date.now();
  const results = new Array(count).fill(null);
  let active = Array.from({ length: count }, (_, j) => j);
  for (let n = 1; active.length > 0; n++) {
    const urls = active.map((j) => url(j + n - 1));
    const started = Date.now();
    const responses = http.batch(urls.map((u) => ['POST', u, req.body, params(req)]));
    const ended = Date.now(); // the batch's end: an upper bound for every copy
    let pause = 0;
    const next = [];
    active.forEach((j, k) => {
      const a = { u: urls[k], started, ended, copy: j, res: responses[k], cls: classify(responses[k]) };
      const d = decide(req, n, a, began, rnd);
      if (d.outcome !== null) {
        results[j] = { outcome: d.outcome, res: a.res, cls: a.cls, attempts: n, ms: Date.now() - began, rec: d.rec };
      } else {
        pause = Math.max(pause, d.pause);
        next.push(j);
      }
    });
    active = next;
    if (active.length > 0) sleep(pause / 1000);
  }
  return results;
}

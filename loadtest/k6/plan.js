// Prints the requests a load test with SEED sends first: the first
// PLAN_N steady and race iterations (key, body, fingerprint, whether the key
// is reused after a success or after an ambiguous attempt, when a race copy
// is sent), one JSON line each on stdout (console.log). k6_test.go runs it twice to show that one seed gives one
// sequence of requests.
import { raceRequest, steadyRequest } from './payments.js';

export const options = { vus: 1, iterations: 1 };

export default function () {
  const n = Number(__ENV.PLAN_N || 50);
  for (let i = 0; i < n; i++) {
    const s = steadyRequest('plan', i);
    const r = raceRequest('plan', i);
    console.log(JSON.stringify({
      i,
      steady: { merchant: s.req.merchant.id, key: s.req.key, body: s.req.body, fp: s.req.fp, reuse: s.reuseKey, reuse_ambiguous: s.reuseAmbiguous },
      race: { merchant: r.req.merchant.id, key: r.req.key, body: r.req.body, at_ms: r.atMs, replica: r.replica },
    }));
  }
}

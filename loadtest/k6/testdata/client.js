// Drives lib/client.js's pay against the fake api of k6_test.go
// (TestClient): one JSON result line per case on stdout.
import { fingerprint, pay } from '../lib/client.js';
import { mulberry32 } from '../lib/rand.js';

// One connection per attempt, as payments.js: Go's client would silently
// re-send a request cut off on a reused connection.
export const options = { vus: 1, iterations: 1, noConnectionReuse: true };

function req(key, amount) {
  const body = JSON.stringify({ amount, currency: 'EUR', customer_id: 'cus_1', description: 'k6 test' });
  return { scenario: 'test', merchant: { id: 'merchant_a', key: 'sk_test' }, key, amount, body, fp: fingerprint(body) };
}

function result(name, r, extra = {}) {
  console.log(JSON.stringify(Object.assign({ kind: 'result', name, outcome: r.outcome, attempts: r.attempts }, extra)));
}

export default function () {
  const rnd = mulberry32(1);
  result('rate-limited', pay(req('rate-limited', 100), rnd));
  let other = null;
  const r = pay(req('ambiguous', 100), rnd, {
    onAmbiguous: () => {
      other = pay(req('ambiguous', 101), rnd, { replica: 1 });
    },
  });
  result('ambiguous', r, { other: other === null ? null : other.outcome });
}

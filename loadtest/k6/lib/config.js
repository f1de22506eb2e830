// Configuration of the k6 scripts, read once from the environment (k6 -e
// NAME=value or the process environment). Every knob has a default that
// matches scripts/local.

function str(name, def) {
  const v = __ENV[name];
  return v === undefined || v === '' ? def : v;
}

function num(name, def) {
  const v = Number(str(name, String(def)));
  if (!Number.isFinite(v)) {
    throw new Error(`${name}=${__ENV[name]} is not a number`);
  }
  return v;
}

// seconds parses a k6-style duration ("90s", "3m", "1m30s", "500ms") into seconds.
export function seconds(d) {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let matched = '';
  for (let m = re.exec(d); m !== null; m = re.exec(d)) {
    matched += m[0];
    total += Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2]];
  }
  if (matched !== d || total <= 0) {
    throw new Error(`"${d}" is not a duration like 90s or 3m`);
  }
  return total;
}

function merchants(spec) {
  return spec.split(',').map((pair) => {
    const [id, key] = pair.split('=');
    if (!id || !key) {
      throw new Error(`MERCHANT_KEYS: "${pair}" is not merchant=api_key`);
    }
    return { id: id.trim(), key: key.trim() };
  });
}

const duration = str('DURATION', '180s');

export const config = {
  // where the api replicas listen; every attempt picks one, retries move on
  baseURLs: str('BASE_URLS', 'http://127.0.0.1:8080,http://127.0.0.1:8082').split(',').map((s) => s.trim()),
  merchants: merchants(str('MERCHANT_KEYS', 'merchant_a=sk_test_merchant_a_0123456789,merchant_b=sk_test_merchant_b_0123456789')),
  duration,
  durationSeconds: seconds(duration),
  rate: num('RATE', 50), // steady payments per second
  seed: num('SEED', 1),
  runID: str('RUN_ID', ''), // prefix of every idempotency key; default: made in setup()
  faults: str('FAULTS', '0') === '1',
  faultdURL: str('FAULTD_URL', 'http://127.0.0.1:8099'),
  killEvery: str('KILL_EVERY', ''), // gap between kills; default: the driver's
  faultPlan: str('FAULT_PLAN', ''), // "matrix": every fault kind once (the driver's MatrixPlan)
  replayRatio: num('REPLAY_RATIO', 0.1), // share of steady payments replayed on purpose
  burstSize: num('BURST_SIZE', 8), // concurrent duplicates per burst
  reuseRatio: num('REUSE_RATIO', 0.03), // share of steady keys reused with another payload, then retried
  // share of steady keys reused with another payload right after an attempt
  // whose outcome is unknown (cut off, timed out, 5xx), before its retry
  ambiguousReuseRatio: num('AMBIGUOUS_REUSE_RATIO', 0.5),
  raceSize: num('RACE_SIZE', 3), // clients (VUs) per key in the race scenario
  maxAttempts: num('MAX_ATTEMPTS', 12),
  retryBudgetMs: seconds(str('RETRY_BUDGET', '60s')) * 1000, // give up when the next retry would start later than this
  requestTimeout: str('REQUEST_TIMEOUT', '10s'),
  summaryPath: str('SUMMARY_PATH', 'summary.json'),
};

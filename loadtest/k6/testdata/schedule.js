// Drives lib/schedule.js's startAt (TestSchedule in k6_test.go): one JSON
// line per case on stdout.
import { startAt } from '../lib/schedule.js';

export const options = { vus: 1, iterations: 1 };

const steps = [
  { at_ms: 10000, for_ms: 15000 }, // a fault that lasts 15 s, then 25 s planned quiet
  { at_ms: 50000, for_ms: 2000 },  // then 3 s planned quiet
  { at_ms: 55000 },
];

function out(name, got) {
  console.log(JSON.stringify({ kind: 'case', name, got }));
}

export default function () {
  const t0 = 1000000;
  out('first keeps its offset', startAt(steps, 0, t0, null, true));
  out('on time: planned', startAt(steps, 1, t0, t0 + 26000, true));
  out('late: returned plus the least quiet time', startAt(steps, 1, t0, t0 + 76000, true));
  out('late: returned plus a shorter planned gap', startAt(steps, 2, t0, t0 + 60000, true));
  out('not sequential: planned', startAt(steps, 1, t0, t0 + 76000, false));
}

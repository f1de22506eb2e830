// The fault schedule's timing, kept apart from payments.js so that a test
// (k6_test.go, testdata/schedule.js) can drive it without a load.

// minSettleMs is the least quiet time a matrix step gets after the step
// before it has returned: enough for invariant 8 to see goodput come back
// before the next fault begins.
export const minSettleMs = 10000;

// startAt returns when step i of steps starts, in ms since the epoch:
// t0 (the scenario's start) plus its offset. In a sequential schedule (the
// fault matrix, one fault of each kind, each judged on its own) a step
// also waits until prevDone (when step i-1 returned, or null) plus the
// quiet time the plan left after it — its gap after the step before's end,
// at most minSettleMs — so that a fault that took longer than planned (a
// broker pod slow to come back) is not still running when the next one
// begins. Other schedules (the demo's kills) keep their offsets: there,
// overlapping faults are the point.
export function startAt(steps, i, t0, prevDone, sequential) {
  const planned = t0 + steps[i].at_ms;
  if (!sequential || i === 0 || prevDone === null || prevDone === undefined) return planned;
  const prev = steps[i - 1];
  const gap = Math.max(0, Math.min(steps[i].at_ms - prev.at_ms - (prev.for_ms || 0), minSettleMs));
  return Math.max(planned, prevDone + gap);
}

-- A call can be rejected for good by the reject_rate fault: outcome
-- 'rejected', answered 400 and stored under its key (psp_idempotency
-- http_status 400, charge_id '') so that a retry replays the rejection.
ALTER TABLE psp_calls DROP CONSTRAINT psp_calls_outcome_check;
ALTER TABLE psp_calls ADD CONSTRAINT psp_calls_outcome_check CHECK (outcome IN (
    'charged', 'declined', 'replayed', 'mismatch', 'fail_before',
    'fail_after', 'error', 'invalid', 'cancelled', 'rejected'));

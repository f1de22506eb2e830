-- The worker's compare-and-set for one charged payment
-- (services/worker/internal/payments Store.Settle): pending -> succeeded.
-- Run with -M prepared and -D k=0 -D p=<prefix of rows seeded pending by
-- seed_pending.sql>; :k is a per-client counter, so every transaction moves
-- a different pending row.
\set k :k + 1
UPDATE payments
   SET status = 'succeeded', psp_charge_id = 'ch_' || :client_id || '_' || :k, failure_reason = NULL, updated_at = now()
 WHERE id = :p || :client_id || '_' || :k AND status = 'pending';

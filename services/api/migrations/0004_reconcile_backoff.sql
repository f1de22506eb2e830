-- 0004: the worker's reconciler backs off per payment (services/worker
-- internal/reconcile).
--
-- Each time the reconciler looks at a pending payment without settling
-- it, it counts the attempt and puts the payment off until reconcile_at
-- (exponential backoff). A round takes the pending payments due first,
-- by coalesce(reconcile_at, created_at), so a payment it could not settle
-- goes behind every other one and cannot starve them.
ALTER TABLE payments
    ADD COLUMN reconcile_attempts integer NOT NULL DEFAULT 0,
    ADD COLUMN reconcile_at       timestamptz; -- NULL: never put off

CREATE INDEX payments_pending_reconcile ON payments ((coalesce(reconcile_at, created_at)))
    WHERE status = 'pending';

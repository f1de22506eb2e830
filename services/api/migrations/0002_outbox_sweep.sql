-- 0002: the pending-payment sweeper (internal/outbox/sweep.go).
--
-- A message confirmed by the broker can still be lost on the way to the
-- worker (RabbitMQ drops messages it dead-letters at most once, a queue is
-- purged or deleted by hand). The sweeper publishes the outbox message of a
-- payment that has stayed pending for too long once more, a bounded number
-- of times, and records it here.
ALTER TABLE outbox
    ADD COLUMN republished    integer     NOT NULL DEFAULT 0, -- times the sweeper published the message again
    ADD COLUMN republished_at timestamptz;                    -- the last of those (broker confirm)

-- The sweeper goes from pending payments (payments_pending_created) to
-- their outbox rows.
CREATE INDEX outbox_payment ON outbox (payment_id);

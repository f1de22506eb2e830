-- The simulator's ledger: every call received, every effective charge, and
-- the idempotency records that make replays byte-identical.

CREATE TABLE psp_idempotency (
    idempotency_key text        PRIMARY KEY,
    fingerprint     bytea       NOT NULL,  -- sha256 of the canonical request
    http_status     integer     NOT NULL,  -- status of the first answer (201 or 402)
    body            bytea       NOT NULL,  -- exact bytes of the first answer
    charge_id       text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- No unique constraint on idempotency_key: with idempotency off, duplicate
-- charges for one key must be recordable.
CREATE TABLE psp_charges (
    id              text        PRIMARY KEY,
    idempotency_key text        NOT NULL,
    reference       text        NOT NULL,
    amount          bigint      NOT NULL CHECK (amount > 0),
    currency        text        NOT NULL,
    customer_id     text        NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX psp_charges_reference_idx ON psp_charges (reference);

-- Nullable columns are NULL when the call did not carry a valid value
-- (outcome invalid) or got no answer (http_status of fail_after / cancelled).
CREATE TABLE psp_calls (
    id              bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    received_at     timestamptz NOT NULL,
    idempotency_key text,
    reference       text,
    amount          bigint,
    currency        text,
    outcome         text        NOT NULL CHECK (outcome IN (
                        'charged', 'declined', 'replayed', 'mismatch', 'fail_before',
                        'fail_after', 'error', 'invalid', 'cancelled')),
    charge_id       text,
    http_status     integer
);
CREATE INDEX psp_calls_reference_idx ON psp_calls (reference);

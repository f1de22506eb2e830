-- 0001: payments (the system of record) and the transactional outbox.

CREATE TABLE payments (
    id                  text        PRIMARY KEY,             -- pay_<random>
    merchant_id         text        NOT NULL,
    idempotency_key     text        NOT NULL,
    request_fingerprint text        NOT NULL,                -- idem.Fingerprint of the POST
    amount              bigint      NOT NULL CHECK (amount > 0), -- minor units
    currency            text        NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
    customer_id         text        NOT NULL,
    description         text        NOT NULL DEFAULT '',
    status              text        NOT NULL DEFAULT 'pending'
                                    CHECK (status IN ('pending', 'succeeded', 'failed')),
    failure_reason      text,
    psp_charge_id       text,
    -- The first answer, byte for byte: the durable backstop replays it when
    -- Redis has forgotten the key.
    response_status     integer     NOT NULL,
    response_body       bytea       NOT NULL,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    -- The durable idempotency backstop: one payment per (merchant, key).
    CONSTRAINT payments_merchant_idempotency_key UNIQUE (merchant_id, idempotency_key)
);

CREATE INDEX payments_pending_created ON payments (created_at) WHERE status = 'pending';

CREATE TABLE outbox (
    id              bigserial   PRIMARY KEY,
    payment_id      text        NOT NULL REFERENCES payments (id),
    merchant_id     text        NOT NULL,
    idempotency_key text        NOT NULL,
    routing_key     text        NOT NULL,
    payload         bytea       NOT NULL,                    -- the message body (JSON)
    created_at      timestamptz NOT NULL DEFAULT now(),
    published_at    timestamptz,                             -- NULL until a broker confirm
    attempts        integer     NOT NULL DEFAULT 0,
    last_error      text
);

CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

-- Worker lease takeovers: a worker that claims the charge stage over an
-- expired lease (its previous owner crashed or stalled) records it here, so
-- the fault-test report can count takeovers durably across restarts.
CREATE TABLE charge_takeovers (
    id          bigserial   PRIMARY KEY,
    payment_id  text        NOT NULL,
    attempt     integer     NOT NULL,
    worker      text        NOT NULL,
    taken_at    timestamptz NOT NULL DEFAULT now()
);

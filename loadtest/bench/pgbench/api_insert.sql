-- The api's transaction for one new payment (services/api/internal/payments
-- Store.Create, createSQL): one statement that inserts the payment with its
-- stored first answer and, only if that insert happened, its outbox row; one
-- round trip, an implicit transaction. Run with -M prepared (pgx prepares and
-- caches statements too) and -D k=0 -D p=<unique prefix>: :k is a per-client
-- counter, so every transaction inserts a new key.
\set k :k + 1
WITH payment AS (
    INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint,
            amount, currency, customer_id, description, status, response_status, response_body, created_at, updated_at)
        VALUES (:p || :client_id || '_' || :k, 'merchant_a', :p || :client_id || '_' || :k,
            '5b0f2d0c1f6d3f4e8a7b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f',
            1250, 'EUR', 'cus_42', 'order 42', 'pending', 202,
            convert_to('{"id":"' || :p || :client_id || '_' || :k || '","merchant_id":"merchant_a","status":"pending","amount":1250,"currency":"EUR","customer_id":"cus_42","description":"order 42","created_at":"2026-11-21T08:22:37.175255Z"}', 'UTF8'),
            now(), now())
        ON CONFLICT ON CONSTRAINT payments_merchant_idempotency_key DO NOTHING
        RETURNING id)
INSERT INTO outbox (payment_id, merchant_id, idempotency_key, routing_key, payload)
    SELECT id, 'merchant_a', id, 'payment.initiated',
        convert_to('{"payment_id":"' || id || '","merchant_id":"merchant_a","idempotency_key":"bench","amount":1250,"currency":"EUR","customer_id":"cus_42"}', 'UTF8')
      FROM payment
    RETURNING id, created_at;

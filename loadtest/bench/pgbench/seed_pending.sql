-- Pending payments for worker_update.sql: ids <p><client>_<k> for clients
-- 0..:clients-1 and k 1..:per_client. Run with psql -v p=... -v clients=N -v per_client=M.
INSERT INTO payments (id, merchant_id, idempotency_key, request_fingerprint,
        amount, currency, customer_id, description, status, response_status, response_body, created_at, updated_at)
SELECT :'p' || c || '_' || k, 'merchant_a', :'p' || c || '_' || k,
       '5b0f2d0c1f6d3f4e8a7b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f',
       1250, 'EUR', 'cus_42', 'order 42', 'pending', 202,
       convert_to('{"id":"' || :'p' || c || '_' || k || '","merchant_id":"merchant_a","status":"pending","amount":1250,"currency":"EUR","customer_id":"cus_42","description":"order 42","created_at":"2026-11-21T08:22:37.175255Z"}', 'UTF8'),
       now(), now()
  FROM generate_series(0, :clients - 1) AS c, generate_series(1, :per_client) AS k;

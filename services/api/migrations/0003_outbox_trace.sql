-- 0003: the trace context of an outbox row (docs/tracing.md).
--
-- The W3C traceparent of the request that wrote the row, when tracing was
-- on: a publish by the relay or the sweeper, long after the request, then
-- still joins the payment's trace. NULL when tracing was off.
ALTER TABLE outbox
    ADD COLUMN trace_parent text;

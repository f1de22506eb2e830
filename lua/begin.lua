-- begin: claim one stage of an idempotent operation.
--
-- KEYS[1]  the operation's hash, idem:v1:{<merchant>:<key>}
-- ARGV[1]  stage name, e.g. "api" or "charge"
-- ARGV[2]  owner token of the caller (random, unique per attempt)
-- ARGV[3]  request fingerprint
-- ARGV[4]  lease in milliseconds
-- ARGV[5]  retention in milliseconds: on ACQUIRED the key TTL is raised to
--          at least lease + retention, so that it outlives the new lease by
--          the retention and a complete within the lease finds it long
--          enough (its PEXPIRE GT is then a no-op: one write, no MULTI/EXEC
--          in the AOF and replication stream)
--
-- Returns one of
--   {"ACQUIRED", attempt, takeover, lease_expires_ms}
--       the stage was absent (or released), or PENDING with an expired lease
--       (takeover = 1); the caller now owns it until lease_expires_ms (Redis TIME)
--   {"IN_PROGRESS", attempt, ms_left}
--       another owner holds a live lease
--   {"COMPLETED", attempt, result}
--       the stage is done; result is exactly what complete stored
--   {"MISMATCH", attempt}
--       the stage holds a different fingerprint (pending or completed)
--
-- Fields per stage (<s> = ARGV[1]): <s>:state ("P" pending | "C" completed),
-- <s>:owner, <s>:fp, <s>:lease (expiry, ms since epoch), <s>:attempt, <s>:result.
-- The lease is an explicit timestamp, not a key TTL, so one hash can hold
-- several stages. The key TTL is only ever raised, never shortened.
local s = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':fp', s .. ':lease', s .. ':attempt', s .. ':result')
local state, fp, lease, attempt = f[1], f[2], tonumber(f[3]), tonumber(f[4]) or 0

if state and fp ~= ARGV[3] then
  return {'MISMATCH', attempt}
end
if state == 'C' then
  return {'COMPLETED', attempt, f[5]}
end
local takeover = 0
if state == 'P' then
  if lease and lease > now then
    return {'IN_PROGRESS', attempt, lease - now}
  end
  takeover = 1
end

attempt = attempt + 1
local expires = now + tonumber(ARGV[4])
redis.call('HSET', KEYS[1],
  s .. ':state', 'P',
  s .. ':owner', ARGV[2],
  s .. ':fp', ARGV[3],
  s .. ':lease', expires,
  s .. ':attempt', attempt)
-- Raise the key TTL to at least lease + retention: NX sets it on a key
-- without one (a new operation: one command), GT raises a shorter one.
local ttl = tonumber(ARGV[4]) + tonumber(ARGV[5])
if redis.call('PEXPIRE', KEYS[1], ttl, 'NX') == 0 then
  redis.call('PEXPIRE', KEYS[1], ttl, 'GT')
end
return {'ACQUIRED', attempt, takeover, expires}

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
-- Decides in this order, on the stage's state:
--   1. COMPLETED, same fingerprint     -> COMPLETED (the stored result)
--   2. COMPLETED, other fingerprint    -> MISMATCH
--   3. PENDING, owned by ARGV[2]       -> ACQUIRED, the reply the first run
--      gave: same attempt, takeover flag and lease expiry, nothing written.
--      A client that resends the script after a lost reply (go-redis retries
--      a command or pipeline after a connection reset) gets its claim back
--      instead of waiting behind it.
--   4. PENDING, live lease             -> IN_PROGRESS, whatever the
--      fingerprint: nothing is accepted for the key yet (the holder may
--      still fail or die), so "another request is in flight" is true and
--      "the key was used for another payload" is not yet.
--   5. PENDING, lease expired          -> ACQUIRED with takeover = 1,
--      whatever the fingerprint: the holder is gone and completed nothing
--      here; the caller's fingerprint replaces the old one. A holder that
--      is in fact still working loses at the caller's durable backstop.
--   6. absent (or released)            -> ACQUIRED, takeover = 0
--
-- Returns one of
--   {"ACQUIRED", attempt, takeover, lease_expires_ms}
--       the caller owns the stage until lease_expires_ms (Redis TIME);
--       attempt is the stage's attempt counter + 1 (not incremented on a rerun)
--   {"IN_PROGRESS", attempt, ms_left}
--       another owner holds a live lease
--   {"COMPLETED", attempt, result}
--       the stage is done; result is exactly what complete stored
--   {"MISMATCH", attempt}
--       the stage was completed under a different fingerprint
--
-- Fields per stage (<s> = ARGV[1]): <s>:state ("P" pending | "C" completed),
-- <s>:owner, <s>:fp, <s>:lease (expiry, ms since epoch), <s>:attempt,
-- <s>:result, and <s>:takeover ("1" when the pending claim was a takeover;
-- written only when it is 1 or already present, absent means 0), which a
-- rerun replays. The lease is an explicit timestamp, not a key TTL, so one
-- hash can hold several stages. The key TTL is only ever raised, never
-- shortened.
local s = ARGV[1]
local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':fp', s .. ':lease', s .. ':attempt', s .. ':result',
  s .. ':owner', s .. ':takeover')
local state, fp, lease, attempt = f[1], f[2], tonumber(f[3]), tonumber(f[4]) or 0

if state == 'C' then
  if fp ~= ARGV[3] then
    return {'MISMATCH', attempt}
  end
  return {'COMPLETED', attempt, f[5]}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local takeover = 0
if state == 'P' then
  if f[6] == ARGV[2] then
    return {'ACQUIRED', attempt, tonumber(f[7]) or 0, lease}
  end
  if lease and lease > now then
    return {'IN_PROGRESS', attempt, lease - now}
  end
  takeover = 1
end

attempt = attempt + 1
local expires = now + tonumber(ARGV[4])
local fields = {s .. ':state', 'P', s .. ':owner', ARGV[2], s .. ':fp', ARGV[3], s .. ':lease', expires,
  s .. ':attempt', attempt}
if takeover == 1 or f[7] then
  fields[#fields + 1] = s .. ':takeover'
  fields[#fields + 1] = takeover
end
redis.call('HSET', KEYS[1], unpack(fields))
-- Raise the key TTL to at least lease + retention: NX sets it on a key
-- without one (a new operation: one command), GT raises a shorter one.
local ttl = tonumber(ARGV[4]) + tonumber(ARGV[5])
if redis.call('PEXPIRE', KEYS[1], ttl, 'NX') == 0 then
  redis.call('PEXPIRE', KEYS[1], ttl, 'GT')
end
return {'ACQUIRED', attempt, takeover, expires}

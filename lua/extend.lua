-- extend: heartbeat for long work; moves the lease expiry to TIME + lease.
--
-- KEYS[1]  the operation's hash, idem:v1:{<merchant>:<key>}
-- ARGV[1]  stage name
-- ARGV[2]  owner token returned with ACQUIRED
-- ARGV[3]  lease in milliseconds
--
-- Returns the new expiry (integer, ms since epoch, Redis TIME) when the stage
-- is PENDING and owned by ARGV[2]; returns "LOST" otherwise and changes nothing.
-- A rerun by the same owner (a resend after a lost reply) extends again and
-- returns the later expiry: the lease only moves forward.
local s = ARGV[1]
local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':owner')
if f[1] ~= 'P' or f[2] ~= ARGV[2] then
  return 'LOST'
end
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], s .. ':lease', expires)
return expires

-- release: give a stage back after a retryable failure, so the next begin
-- acquires at once instead of waiting for the lease to run out.
--
-- KEYS[1]  the operation's hash, idem:v1:{<merchant>:<key>}
-- ARGV[1]  stage name
-- ARGV[2]  owner token returned with ACQUIRED
--
-- Returns "OK" when the stage was PENDING and owned by ARGV[2]: its state,
-- fingerprint and lease are removed; the attempt counter and the owner are
-- kept. Also "OK", writing nothing, when ARGV[2] already released it (no
-- state, ARGV[2] still the last owner): a release resent after a lost reply
-- (go-redis retries after a connection reset) answers as its first run did.
-- Returns "LOST" otherwise and changes nothing (a stale owner cannot release
-- a newer owner's claim, nor un-complete a stage).
--
-- The kept owner field is inert: begin, complete and extend act on an owner
-- only together with a state, and the next begin overwrites it.
local s = ARGV[1]
local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':owner')
if f[2] ~= ARGV[2] or f[1] == 'C' then
  return 'LOST'
end
if f[1] == 'P' then
  redis.call('HDEL', KEYS[1], s .. ':state', s .. ':fp', s .. ':lease')
end
return 'OK'

-- release: give a stage back after a retryable failure, so the next begin
-- acquires at once instead of waiting for the lease to run out.
--
-- KEYS[1]  the operation's hash, idem:v1:{<merchant>:<key>}
-- ARGV[1]  stage name
-- ARGV[2]  owner token returned with ACQUIRED
--
-- Returns "OK" when the stage was PENDING and owned by ARGV[2]: its state,
-- owner, fingerprint and lease are removed; the attempt counter is kept.
-- Returns "LOST" otherwise and changes nothing (a stale owner cannot release
-- a newer owner's claim, nor un-complete a stage).
local s = ARGV[1]
local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':owner')
if f[1] ~= 'P' or f[2] ~= ARGV[2] then
  return 'LOST'
end
redis.call('HDEL', KEYS[1], s .. ':state', s .. ':owner', s .. ':fp', s .. ':lease')
return 'OK'

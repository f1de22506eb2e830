-- complete: store the result of a stage and mark it COMPLETED.
--
-- KEYS[1]  the operation's hash, idem:v1:{<merchant>:<key>}
-- ARGV[1]  stage name
-- ARGV[2]  owner token returned with ACQUIRED
-- ARGV[3]  result (opaque bytes; replayed byte for byte by begin)
-- ARGV[4]  retention in milliseconds (the key TTL is raised to at least this;
--          PEXPIRE GT, Redis 7.0 or later: a key without a TTL keeps none).
--          begin set it to lease + retention, so within the lease this is a
--          no-op that writes nothing; after the lease ran out it raises it.
-- ARGV[5]  optional fingerprint: when given, it replaces the stage's <s>:fp,
--          so that begin replays the result to requests with this fingerprint
--          and answers MISMATCH to every other, the caller's own included.
--          For a caller whose durable backstop found the key held by another
--          request: the stage is repaired to that request's truth.
--
-- Returns "OK" when ARGV[2] still owns the stage: it is PENDING with this owner
-- (a lease that ran out without anyone taking over still counts: no newer owner
-- exists whose result could be overwritten), or already COMPLETED by this owner
-- (a retried complete, or one resent after a lost reply: it writes nothing and
-- keeps the first run's result). Returns "LOST" otherwise: someone else took
-- the stage over, or it was released or forgotten. LOST never writes anything.
local s = ARGV[1]
local f = redis.call('HMGET', KEYS[1], s .. ':state', s .. ':owner')
if f[2] ~= ARGV[2] then
  return 'LOST'
end
if f[1] == 'C' then
  return 'OK'
end
if f[1] ~= 'P' then
  return 'LOST'
end
-- <s>:lease is left as it was: begin and extend read it only while the
-- stage is PENDING, so deleting it would cost a command and change nothing.
if ARGV[5] then
  redis.call('HSET', KEYS[1], s .. ':state', 'C', s .. ':result', ARGV[3], s .. ':fp', ARGV[5])
else
  redis.call('HSET', KEYS[1], s .. ':state', 'C', s .. ':result', ARGV[3])
end
redis.call('PEXPIRE', KEYS[1], ARGV[4], 'GT')
return 'OK'

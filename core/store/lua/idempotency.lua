--[[
  idempotency: takes a client's Idempotency-Key for a request before it submits anything, or
  releases it when that request failed after taking it (api/idempotency.ts). submit.lua turns the
  lock into the completed record in the same call that creates the jobs.

  A key's record is a hash at idempotency (client, SHA-256 of the key):
    state        'locked' while its first request is in flight, 'done' once that request submitted
    fingerprint  the SHA-256 of the request's method, route and canonical body
    token        (locked) the random id of the request that holds the lock
    result       (done) submit.lua's JSON {job_ids, types, queue_positions, batch_id?}
  A lock lives ARGV[8] ms (a request that never comes back frees its key); a completed record lives
  limits.idempotency_ttl.

  Input:
    KEYS  idempotency idempotency_stats

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] 'take' or 'release'
    ARGV[4] the client the key is of (its name, '-' without authentication)
    ARGV[5] the key's SHA-256, hex
    ARGV[6] the request's token (a random id)
    ARGV[7] take: the request's fingerprint
    ARGV[8] take: how long the lock lives, in ms

  Output:
    take: { 'new' } the key is now locked for this request;
          { 'replay', result } the key's request is done: result is its record's result;
          { 'in_flight' } another request with the same fingerprint holds the lock;
          { 'mismatch' } the key is locked or done for a request with another fingerprint.
          Each outcome but 'new' is counted in idempotency_stats (replayed, in_flight, mismatch).
    release: 1 when the key was locked by this token and is free now, else 0 (completed, taken by
      another request since, or gone)

  Emits: nothing

  Errors:
    ERR invalid lock ms: <value>, ERR invalid operation: <value>
]]
local op, client, id, token = ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local key = at(K.idempotency, client, id)

if op == 'release' then
  local held = redis.call('HMGET', key, 'state', 'token')
  if held[1] == 'locked' and held[2] == token then
    redis.call('DEL', key)
    return 1
  end
  return 0
end
if op ~= 'take' then return redis.error_reply('ERR invalid operation: ' .. tostring(op)) end

local fingerprint = ARGV[7]
local lock_ms, invalid = number_arg(ARGV[8], 'lock ms', 1)
if invalid then return invalid end

local held = redis.call('HMGET', key, 'state', 'fingerprint', 'result')
if not held[1] then
  redis.call('HSET', key, 'state', 'locked', 'fingerprint', fingerprint, 'token', token)
  redis.call('PEXPIRE', key, math.floor(lock_ms))
  return { 'new' }
end
local outcome
if held[2] ~= fingerprint then
  outcome = { 'mismatch' }
elseif held[1] == 'done' then
  outcome = { 'replay', held[3] }
else
  outcome = { 'in_flight' }
end
redis.call('HINCRBY', K.idempotency_stats, outcome[1] == 'replay' and 'replayed' or outcome[1], 1)
return outcome

--[[
  pool_claim: a pool worker takes the oldest job of the pool's queue (pool.lua put it there) under a
  lease, as claim.lua takes one from a type's queue: from here on it is claimed, renewed, started,
  given back and reaped like any claimed job. Entries whose job is gone or no longer pending
  (cancelled while it waited, pruned) are dropped on the way. Each job taken is counted
  (pool_taken), so that a controller can tell a queue nobody takes from.

  Input:
    KEYS  job active pool pool_taken queues job_events client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] lease, in ms
    ARGV[4] owner (the worker: recorded as claimed_by)
    ARGV[5] the pool queue's limit: a claim that leaves the queue one below it tells the dispatchers
            (the queues channel) that they may hand it jobs again

  Output:
    { job id, job type }, or nil when the pool's queue has no pending job

  Emits: nothing

  Errors:
    ERR invalid lease (below 1 ms, or not a number): nothing is taken
]]
local owner = ARGV[4]
local lease_ms, bad = number_arg(ARGV[3], 'lease', 1)
if bad then return bad end
while true do
  local id = redis.call('RPOP', K.pool)
  if not id then return nil end
  local j = at(K.job, id)
  local h = redis.call('HMGET', j, 'status', 'type')
  if h[1] == 'pending' then
    redis.call('ZADD', at(K.active, h[2]), NOW + lease_ms, id)
    redis.call('HSET', j, 'claimed_by', owner, 'lease_until', NOW + lease_ms)
    -- Held since its dispatcher claimed it (claim.lua); a job given back meanwhile is held again.
    hold(id)
    redis.call('INCR', K.pool_taken)
    timeline(id, 'claimed', { message = owner })
    -- A dispatcher holds jobs back while the pool's queue is full: there is room now.
    if redis.call('LLEN', K.pool) == tonumber(ARGV[5]) - 1 then redis.call('PUBLISH', K.queues, 'pool_room') end
    return { id, h[2] }
  end
end

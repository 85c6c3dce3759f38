--[[
  pool: hands a job its dispatcher has claimed to the warm runner pool: out of its type's leases and
  onto the pool's queue (first in, first out: the dispatcher took it in priority order), where a pool
  worker takes it (pool_claim.lua). It stays pending; nobody holds a lease on it while it waits. The
  pool's queue holds at most ARGV[6] jobs: beyond that the job stays claimed, for its dispatcher to
  give back (requeue.lua's hand-back), and the answer says so.

  Input:
    KEYS  job active pool pool_channel job_events

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] the dispatcher's owner (who claimed it)
    ARGV[5] why the pool (the timeline's message)
    ARGV[6] the pool queue's limit

  Output:
    the pool queue's length with the job in it; 0 when the queue was full; -1 when the job is no
    longer claimed by ARGV[4] as pending (cancelled, given back, claimed by another): nothing done

  Emits: nothing

  Errors:
    ERR invalid pool queue limit (below 1, or not a number)
]]
local id, owner = ARGV[3], ARGV[4]
local limit, bad = number_arg(ARGV[6], 'pool queue limit', 1)
if bad then return bad end
local j = at(K.job, id)
local h = redis.call('HMGET', j, 'status', 'type', 'claimed_by')
if h[1] ~= 'pending' or h[3] ~= owner then return -1 end
local active = at(K.active, h[2])
if not redis.call('ZSCORE', active, id) then return -1 end
if redis.call('LLEN', K.pool) >= limit then return 0 end
redis.call('ZREM', active, id)
redis.call('HDEL', j, 'claimed_by', 'lease_until')
local length = redis.call('LPUSH', K.pool, id)
timeline(id, 'pooled', { message = ARGV[5] })
redis.call('PUBLISH', K.pool_channel, 'work')
return length

--[[
  renew: extends the lease of a claimed or processing job.

  Input:
    KEYS  job active

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] lease, in ms from now

  Output:
    1 when renewed, 0 when the job holds no lease (finished, unclaimed, or no such job)

  Emits: nothing

  Errors:
    ERR invalid lease (below 1 ms, or not a number)
]]
local id = ARGV[3]
local lease_ms, bad = number_arg(ARGV[4], 'lease', 1)
if bad then return bad end
local j = at(K.job, id)
local type = redis.call('HGET', j, 'type')
if not type then return 0 end
local active = at(K.active, type)
if not redis.call('ZSCORE', active, id) then return 0 end
redis.call('ZADD', active, NOW + lease_ms, id)
redis.call('HSET', j, 'lease_until', NOW + lease_ms)
return 1

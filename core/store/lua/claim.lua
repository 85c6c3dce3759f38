--[[
  claim: takes the first job of a queue (the highest priority, the earliest submitted of it; see
  lib.lua queue_score) for an executor, under a lease. The job stays pending until its work really
  starts (start.lua). Entries whose job is gone or no longer pending (pruned, cancelled) are dropped
  on the way.

  Input:
    KEYS  pending active job queue_seq job_events history

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job type
    ARGV[4] lease, in ms
    ARGV[5] owner (who claims: recorded as claimed_by)

  Output:
    the job id, or nil when the queue has no pending job

  Errors:
    ERR invalid lease (below 1 ms, or not a number): nothing is taken
]]
local type, owner = ARGV[3], ARGV[5]
local lease_ms, bad = number_arg(ARGV[4], 'lease', 1)
if bad then return bad end
local queue = pending_queue(type)
while true do
  local first = redis.call('ZPOPMIN', queue)
  local id = first[1]
  if not id then return nil end
  local j = at(K.job, id)
  if redis.call('HGET', j, 'status') == 'pending' then
    redis.call('ZADD', at(K.active, type), NOW + lease_ms, id)
    redis.call('HSET', j, 'claimed_by', owner, 'lease_until', NOW + lease_ms)
    timeline(id, 'claimed', { message = owner })
    note_depth(type)
    return id
  end
end

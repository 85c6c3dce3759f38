--[[
  claim: takes the first job of the first non-empty queue among the types given, in their order
  (in a queue: the highest priority, the earliest submitted of it; see lib.lua queue_score), for
  an executor, under a lease. The job stays pending until its work really starts (start.lua).
  Entries whose job is gone or no longer pending (pruned, cancelled) are dropped on the way. One
  call tries every type a dispatcher has room for, instead of one round trip per type.

  Input:
    KEYS  pending active job queue_seq job_events history client_stats

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job types to try, in order, separated by commas
    ARGV[4] lease, in ms
    ARGV[5] owner (who claims: recorded as claimed_by)

  Output:
    { job id, job type }, or nil when none of the queues has a pending job

  Emits: nothing

  Errors:
    ERR invalid lease (below 1 ms, or not a number): nothing is taken
]]
local owner = ARGV[5]
local lease_ms, bad = number_arg(ARGV[4], 'lease', 1)
if bad then return bad end
for type in string.gmatch(ARGV[3], '[^,]+') do
  local queue = pending_queue(type)
  while true do
    local first = redis.call('ZPOPMIN', queue)
    local id = first[1]
    if not id then break end
    local j = at(K.job, id)
    if redis.call('HGET', j, 'status') == 'pending' then
      redis.call('ZADD', at(K.active, type), NOW + lease_ms, id)
      redis.call('HSET', j, 'claimed_by', owner, 'lease_until', NOW + lease_ms)
      timeline(id, 'claimed', { message = owner })
      note_depth(type, -1, id)
      return { id, type }
    end
  end
end
return nil

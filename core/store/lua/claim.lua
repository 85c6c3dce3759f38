-- claim: takes the job at the head of a queue for an executor, under a lease. The job stays
-- pending until its work really starts (start.lua). Entries whose job is gone or no longer pending
-- (pruned, cancelled) are dropped on the way.
-- ARGV[4]: job type, ARGV[5]: lease in ms, ARGV[6]: owner. Returns the job id or nil.
local type, owner = ARGV[4], ARGV[6]
local lease_ms, bad = number_arg(ARGV[5], 'lease', 1)
if bad then return bad end
local queue = key('queue', type, 'pending')
while true do
  local id = redis.call('LPOP', queue)
  if not id then return nil end
  local j = key('job', id)
  if redis.call('HGET', j, 'status') == 'pending' then
    redis.call('ZADD', key('queue', type, 'active'), NOW + lease_ms, id)
    redis.call('HSET', j, 'claimed_by', owner, 'lease_until', NOW + lease_ms)
    return id
  end
end

-- reap: re-queues the claimed and processing jobs whose lease has run out (by Redis' clock): their
-- executor died or lost Redis, and stopped renewing them.
-- ARGV[4..]: the job types to look at. Returns the ids re-queued.
local reaped = {}
for i = 4, #ARGV do
  local type = ARGV[i]
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', key('queue', type, 'active'), '-inf', NOW, 'LIMIT', 0, 100)) do
    if redis.call('EXISTS', key('job', id)) == 1 then
      if requeue_job(id, 'its executor stopped renewing the lease') == 1 then reaped[#reaped + 1] = id end
    else
      redis.call('ZREM', key('queue', type, 'active'), id)
    end
  end
end
if #reaped > 0 then redis.call('PUBLISH', key('queues'), 'requeued') end
return reaped

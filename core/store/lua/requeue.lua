-- requeue: gives a claimed or processing job back to the head of its queue (its executor died,
-- its lease expired, a transient failure will be retried). Finished jobs are left alone.
-- ARGV[4]: job id, ARGV[5]: reason. Returns 1 when it changed the job, 0 otherwise.
local id, reason = ARGV[4], ARGV[5]
local j = key('job', id)
local h = redis.call('HMGET', j, 'status', 'type', 'batch_id', 'created_ms')
local status, type, batch_id = h[1], h[2], h[3]
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status ~= 'pending' and status ~= 'processing' then return 0 end
if redis.call('ZREM', key('queue', type, 'active'), id) == 0 and status == 'pending' then return 0 end
redis.call('HDEL', j, 'claimed_by', 'lease_until', 'progress', 'started_at', 'started_ms')
redis.call('LPUSH', key('queue', type, 'pending'), id)
redis.call('HSET', j, 'updated_at', NOW_ISO)
if status == 'processing' then
  redis.call('HSET', j, 'status', 'pending')
  count(type, 'processing', 'pending')
  move_status_index(id, 'processing', 'pending', tonumber(h[4]))
  if batch_id and batch_id ~= '' then batch_move(batch_id, 'processing', 'pending') end
end
publish(id, 'status', { status = 'pending', message = 'requeued: ' .. reason })
record('job.requeued', { job_id = id, type = type, batch_id = batch_id, status = 'pending', reason = reason })
return 1

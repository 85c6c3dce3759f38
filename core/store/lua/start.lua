-- start: pending -> processing, when the work really begins (child spawned, pod running). The job
-- must have been claimed. A job already processing is left as it is (duplicate report).
-- ARGV[4]: job id, ARGV[5]: lease in ms. Returns 1 when it changed the job, 0 for a duplicate.
local id = ARGV[4]
local lease_ms, bad = number_arg(ARGV[5], 'lease', 1)
if bad then return bad end
local j = key('job', id)
local h = redis.call('HMGET', j, 'status', 'type', 'batch_id', 'created_ms')
local status, type, batch_id = h[1], h[2], h[3]
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status == 'processing' then return 0 end
if status ~= 'pending' then return illegal(id, status, 'processing') end
if not redis.call('ZSCORE', key('queue', type, 'active'), id) then
  return redis.error_reply('ILLEGAL job ' .. id .. ' is pending but not claimed, cannot become processing')
end
redis.call('ZADD', key('queue', type, 'active'), NOW + lease_ms, id)
redis.call('HSET', j, 'status', 'processing', 'started_at', NOW_ISO, 'started_ms', NOW, 'updated_at', NOW_ISO,
  'lease_until', NOW + lease_ms, 'progress', 0)
redis.call('HINCRBY', j, 'attempts', 1)
count(type, 'pending', 'processing')
move_status_index(id, 'pending', 'processing', tonumber(h[4]))
publish(id, 'status', { status = 'processing', message = 'processing started' })
record('job.started', { job_id = id, type = type, batch_id = batch_id, status = 'processing' })
if batch_id and batch_id ~= '' then
  batch_move(batch_id, 'pending', 'processing')
  if redis.call('HGET', key('batch', batch_id), 'status') == 'queued' then
    set_batch_status(batch_id, 'queued', 'processing')
  end
end
return 1

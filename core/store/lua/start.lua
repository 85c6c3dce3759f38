--[[
  start: pending -> processing, when the work really begins (child spawned, pod running). The job
  must have been claimed. Each start charges the job one attempt of its retry budget (requeue.lua).
  A job already processing is left as it is (duplicate report).

  Input:
    KEYS  job job_channel active stats jobs_by_status client_jobs_by_status batch batches_by_status
          client_batches_by_status events job_events
          client_stats

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] lease, in ms from now

  Output:
    1 when it started the job, 0 for a duplicate (already processing)

  Emits: job.started

  Errors:
    NOTFOUND job <id> does not exist
    ILLEGAL job <id> is <completed|failed>, cannot become processing
    ILLEGAL job <id> is pending but not claimed, cannot become processing
    ERR invalid lease (below 1 ms, or not a number)
]]
local id = ARGV[3]
local lease_ms, bad = number_arg(ARGV[4], 'lease', 1)
if bad then return bad end
local j = at(K.job, id)
local h = redis.call('HMGET', j, 'status', 'type', 'batch_id', 'created_ms')
local status, type, batch_id = h[1], h[2], h[3]
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status == 'processing' then return 0 end
if status ~= 'pending' then return illegal(id, status, 'processing') end
local active = at(K.active, type)
if not redis.call('ZSCORE', active, id) then
  return redis.error_reply('ILLEGAL job ' .. id .. ' is pending but not claimed, cannot become processing')
end
redis.call('ZADD', active, NOW + lease_ms, id)
redis.call('HSET', j, 'status', 'processing', 'started_at', NOW_ISO, 'started_ms', NOW, 'updated_at', NOW_ISO,
  'lease_until', NOW + lease_ms, 'progress', 0)
redis.call('HDEL', j, 'eta_seconds')
local attempt = redis.call('HINCRBY', j, 'attempts', 1)
timeline(id, 'started', { attempt = attempt })
count(type, 'pending', 'processing', nil, id)
move_status_index(id, 'pending', 'processing', tonumber(h[4]))
publish(id, 'status', { status = 'processing', message = 'processing started' })
record('job.started', { job_id = id, type = type, batch_id = batch_id, status = 'processing' })
if batch_id and batch_id ~= '' then
  batch_move(batch_id, 'pending', 'processing')
  if redis.call('HGET', at(K.batch, batch_id), 'status') == 'queued' then
    set_batch_status(batch_id, 'queued', 'processing')
  end
end
return 1

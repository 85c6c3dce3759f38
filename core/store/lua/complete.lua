--[[
  complete: processing -> completed with its result. A duplicate report is a no-op; so is a late
  report for a job that was failed meanwhile (cancelled by its batch), which keeps its failure.

  Input:
    KEYS  job job_channel active stats histogram jobs_by_status client_jobs_by_status batch
          batches_by_status client_batches_by_status expiry events job_events history
          client_stats client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] result, JSON
    ARGV[5] the histogram's bucket bounds in seconds, a JSON array

  Output:
    1 when it completed the job, 0 for a duplicate or a job that already failed

  Emits: job.completed; batch.completed when it was its batch's last job (lib.lua finalize_batch)

  Errors:
    NOTFOUND job <id> does not exist
    ILLEGAL job <id> is pending, cannot become completed
]]
local id, result_json, bounds = ARGV[3], ARGV[4], cjson.decode(ARGV[5])
local j = at(K.job, id)
local h = redis.call('HMGET', j, 'status', 'type', 'batch_id', 'created_ms', 'started_ms', 'request_id',
  'webhook_url')
local status, type, batch_id = h[1], h[2], h[3]
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status == 'completed' or status == 'failed' then return 0 end
if status ~= 'processing' then return illegal(id, status, 'completed') end
local duration = (NOW - tonumber(h[5])) / 1000
redis.call('HSET', j, 'status', 'completed', 'result', result_json, 'progress', 100, 'updated_at', NOW_ISO,
  'completed_at', NOW_ISO, 'duration_seconds', tostring(duration))
redis.call('HDEL', j, 'claimed_by', 'lease_until', 'partial_result')
redis.call('ZREM', at(K.active, type), id)
release(id)
count(type, 'processing', 'completed', 'completed_total', id)
move_status_index(id, 'processing', 'completed', tonumber(h[4]))
redis.call('ZADD', K.expiry, NOW + RETENTION_MS, expiry_member('job', id))

-- Duration histogram, kept in Redis so every process's /metrics reports the same figures.
local hist = at(K.histogram, type)
for i, bound in ipairs(bounds) do
  if duration <= bound then redis.call('HINCRBY', hist, 'b' .. i, 1) end
end
redis.call('HINCRBY', hist, 'count', 1)
redis.call('HINCRBYFLOAT', hist, 'sum', duration)

note_ended(type, 'completed', duration, bounds, id)

publish(id, 'complete', { status = 'completed' })
timeline(id, 'completed')
record('job.completed', {
  job_id = id, type = type, batch_id = batch_id, status = 'completed', request_id = h[6], webhook = h[7] and 1,
})
if batch_id and batch_id ~= '' then
  batch_move(batch_id, 'processing', 'completed')
  finalize_batch(batch_id)
end
return 1

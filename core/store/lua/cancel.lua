--[[
  cancel: a client stops a job, or every unfinished job of a batch. A pending or processing job fails
  at once with the given message as a cancellation (job.cancelled: the executor running it stops its
  runner; cancelled_at is set); a job that was cancelled before is left as it is. A batch is marked
  cancelled_at and each of its pending and processing jobs is cancelled (its fail_fast does not turn
  them into failures of the first one); it then ends by the usual rule.

  Input:
    KEYS  job job_channel pending active stats jobs_by_status client_jobs_by_status batch batch_jobs
          batches_by_status client_batches_by_status expiry events job_events history
          jobs_by_state client_jobs_by_state
          client_stats fair_queue fair_clients client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] "job" or "batch"
    ARGV[4] its id
    ARGV[5] the error message of the cancelled jobs

  Output:
    "cancelled" (it changed), "unchanged" (cancelled before), or the status of a job or batch that
    had already ended otherwise: "completed", "failed" (a job), "completed", "failed", "partial" (a batch)

  Emits:
    job.cancelled for each job it cancels (lib.lua cancel_job), and, for a job of a
    fail_fast batch, for each of the others too (stop_batch); batch.completed when the batch has
    ended (finalize_batch)

  Errors:
    NOTFOUND job <id> does not exist / NOTFOUND batch <id> does not exist
]]
local kind, id, message = ARGV[3], ARGV[4], ARGV[5]
if kind == 'job' then
  local h = redis.call('HMGET', at(K.job, id), 'status', 'cancelled')
  local status = h[1]
  if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
  if h[2] == '1' then return 'unchanged' end
  if status ~= 'pending' and status ~= 'processing' then return status end
  cancel_job(id, status, message)
  return 'cancelled'
end
local b = at(K.batch, id)
local h = redis.call('HMGET', b, 'status', 'cancelled_at')
local status = h[1]
if not status then return redis.error_reply('NOTFOUND batch ' .. id .. ' does not exist') end
if h[2] then return 'unchanged' end
if status == 'completed' or status == 'failed' or status == 'partial' then return status end
redis.call('HSET', b, 'cancelled_at', NOW_ISO)
cancelling_batch = true
for _, job in ipairs(redis.call('LRANGE', at(K.batch_jobs, id), 0, -1)) do
  local st = redis.call('HGET', at(K.job, job), 'status')
  if st == 'pending' or st == 'processing' then cancel_job(job, st, message) end
end
return 'cancelled'

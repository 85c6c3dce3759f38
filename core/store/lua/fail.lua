--[[
  fail: pending or processing -> failed with a message. Pending jobs can fail too (cancelled, never
  schedulable). In a fail_fast batch the first failure stops the batch: its other pending and
  processing jobs are cancelled (job.cancelled). A duplicate is a no-op; a completed job cannot fail.

  Input:
    KEYS  job job_channel pending active stats jobs_by_status client_jobs_by_status batch batch_jobs
          batches_by_status client_batches_by_status expiry events job_events history
          jobs_by_state client_jobs_by_state
          client_stats fair_queue fair_clients client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] error message
    ARGV[5] "1" when this is a cancellation (job.cancelled rather than job.failed)
    ARGV[6] attempts, when the executor retried the job itself (a Kubernetes Job's pods) and this is
            the last failure: more than 1 makes the error "<message> (gave up after <n> attempts)"
    ARGV[7] a result to record with the failure, JSON (a pipeline's completed steps, keep_partial);
            '' or absent for none

  Output:
    1 when it failed the job, 0 when it had already failed

  Emits:
    job.failed, or job.cancelled for a cancellation (lib.lua fail_job, cancel_job); in a
    fail_fast batch it stops, job.cancelled for each of the others (stop_batch); batch.completed
    when it was its batch's last job (finalize_batch)

  Errors:
    NOTFOUND job <id> does not exist
    ILLEGAL job <id> is completed, cannot become failed
]]
local id, message, cancelled = ARGV[3], ARGV[4], ARGV[5] == '1'
local status = redis.call('HGET', at(K.job, id), 'status')
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status == 'failed' then return 0 end
if status == 'completed' then return illegal(id, status, 'failed') end
local attempts = tonumber(ARGV[6])
if attempts and attempts > 1 then message = gave_up(message, attempts) end
if ARGV[7] ~= nil and ARGV[7] ~= '' then redis.call('HSET', at(K.job, id), 'result', ARGV[7]) end
if cancelled then cancel_job(id, status, message) else fail_job(id, status, message) end
return 1

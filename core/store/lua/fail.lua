--[[
  fail: pending or processing -> failed with a message. Pending jobs can fail too (cancelled, never
  schedulable). In a fail_fast batch the first failure stops the batch: its other pending and
  processing jobs are cancelled (job.cancelled). A duplicate is a no-op; a completed job cannot fail.

  Input:
    KEYS[1]  job                        the job hashes
    KEYS[2]  job_channel                each job's pub/sub channel
    KEYS[3]  pending                    the queues' waiting jobs
    KEYS[4]  active                     the queues' leases
    KEYS[5]  stats                      the queues' counters
    KEYS[6]  jobs_by_status             the job index by status
    KEYS[7]  client_jobs_by_status      a client's job index by status
    KEYS[8]  batch                      the batch hashes
    KEYS[9]  batch_jobs                 each batch's job ids
    KEYS[10] batches_by_status          the batch index by status
    KEYS[11] client_batches_by_status   a client's batch index by status
    KEYS[12] expiry                     finished records by deletion time
    KEYS[13] events                     the events stream

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] error message
    ARGV[5] "1" when this is a cancellation (job.cancelled rather than job.failed)
    ARGV[6] attempts, when the executor retried the job itself (a Kubernetes Job's pods) and this is
            the last failure: more than 1 makes the error "<message> (gave up after <n> attempts)"

  Output:
    1 when it failed the job, 0 when it had already failed

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
fail_job(id, status, message, cancelled)
return 1

--[[
  reap: gives back the claimed and processing jobs whose lease has run out (by Redis' clock): their
  executor died or lost Redis, and stopped renewing them. Each goes back as requeue.lua gives a job
  back, within its retry budget: a processing job whose attempts have reached the budget fails with
  "its executor stopped renewing the lease (gave up after <attempts> attempts)". At most 100 jobs of
  each type per call; lease entries whose job is gone are dropped. With an owner prefix, only the
  jobs claimed by an owner whose name begins with it are looked at (a pool worker reaps the pool's,
  never a Kubernetes Job's, whose lease its controller renews).

  Input:
    KEYS  job job_channel pending active stats jobs_by_status client_jobs_by_status batch batch_jobs
          batches_by_status client_batches_by_status expiry events queues queue_seq job_events history
          jobs_by_state client_jobs_by_state
          client_stats fair_queue fair_clients fair_turn client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] the retry budget (as requeue.lua's ARGV[5])
    ARGV[4] owner prefix ("" for every owner)
    ARGV[5..] the job types whose leases to look at

  Output:
    a flat array: job id, "requeued" or "failed", job id, ... (empty when no lease had run out)

  Emits:
    for each job, job.requeued; or, when its budget was spent, what fail.lua emits for a
    failure: job.failed, job.cancelled for the rest of a fail_fast batch, batch.completed (lib.lua
    requeue_job, fail_job)

  Errors:
    ERR invalid max attempts (below 1, or not a number)
]]
local max_attempts, bad = number_arg(ARGV[3], 'max attempts', 1)
if bad then return bad end
local prefix = ARGV[4]
local reaped, requeued = {}, false
for i = 5, #ARGV do
  local active = at(K.active, ARGV[i])
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', active, '-inf', NOW, 'LIMIT', 0, 100)) do
    local owner = redis.call('HGET', at(K.job, id), 'claimed_by')
    if owner and string.sub(owner, 1, #prefix) ~= prefix then
      -- Another kind of executor's job: not ours to reap.
    elseif redis.call('EXISTS', at(K.job, id)) == 1 then
      local outcome = requeue_job(id, 'its executor stopped renewing the lease', max_attempts, false)
      if outcome == 'requeued' or outcome == 'failed' then
        reaped[#reaped + 1] = id
        reaped[#reaped + 1] = outcome
      end
      if outcome == 'requeued' then requeued = true end
    else
      redis.call('ZREM', active, id)
    end
  end
end
if requeued then redis.call('PUBLISH', K.queues, 'requeued') end
return reaped

--[[
  requeue: gives a claimed or processing job back to the head of its queue (its executor died, a
  transient failure will be retried, its executor stops), within its retry budget: a processing job
  whose attempts (one per start) have reached the budget is failed instead, as fail.lua fails a job,
  with the error "<reason> (gave up after <attempts> attempts)". A job that is only claimed (pending)
  has not been charged for this run and always goes back.
  A hand-back (ARGV[6] "1": the run was interrupted by its executor stopping, it did not fail) is
  never failed and refunds the attempt its run was charged at start, so the job keeps its whole
  budget. Finished jobs and pending jobs nobody claimed are left alone.

  Input:
    KEYS  job job_channel pending active stats jobs_by_status client_jobs_by_status batch batch_jobs
          batches_by_status client_batches_by_status expiry events queues queue_seq job_events history
          jobs_by_state client_jobs_by_state
          client_stats fair_queue fair_clients fair_turn client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] reason (in the job's message, the job.requeued event, and the error when it fails)
    ARGV[5] the retry budget: attempts a job may be charged (executor.max_attempts), at least 1
    ARGV[6] "1" for a hand-back, "0" otherwise

  Output:
    "requeued", "failed" (its budget was spent), or "unchanged" (nothing to give back)

  Emits:
    job.requeued; or, for a job whose budget was spent, what fail.lua emits for a failure:
    job.failed, job.cancelled for the rest of a fail_fast batch, batch.completed (lib.lua
    requeue_job, fail_job)

  Errors:
    NOTFOUND job <id> does not exist
    ERR invalid max attempts (below 1, or not a number)
]]
local max_attempts, bad = number_arg(ARGV[5], 'max attempts', 1)
if bad then return bad end
local outcome = requeue_job(ARGV[3], ARGV[4], max_attempts, ARGV[6] == '1')
if outcome == 'requeued' then redis.call('PUBLISH', K.queues, 'requeued') end
return outcome

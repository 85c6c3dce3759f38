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
    KEYS[14] queues                     the channel that wakes idle executors

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] reason (in the job's message, the job.requeued event, and the error when it fails)
    ARGV[5] the retry budget: attempts a job may be charged (executor.max_attempts), at least 1
    ARGV[6] "1" for a hand-back, "0" otherwise

  Output:
    "requeued", "failed" (its budget was spent), or "unchanged" (nothing to give back)

  Errors:
    NOTFOUND job <id> does not exist
    ERR invalid max attempts (below 1, or not a number)
]]
local max_attempts, bad = number_arg(ARGV[5], 'max attempts', 1)
if bad then return bad end
local outcome = requeue_job(ARGV[3], ARGV[4], max_attempts, ARGV[6] == '1')
if outcome == 'requeued' then redis.call('PUBLISH', K.queues, 'requeued') end
return outcome

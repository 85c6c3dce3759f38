-- requeue: gives a claimed or processing job back to the head of its queue (its executor died,
-- its lease expired, a transient failure will be retried). Finished jobs are left alone.
-- ARGV[4]: job id, ARGV[5]: reason. Returns 1 when it changed the job, 0 otherwise.
local changed = requeue_job(ARGV[4], ARGV[5])
if changed == 1 then redis.call('PUBLISH', key('queues'), 'requeued') end
return changed

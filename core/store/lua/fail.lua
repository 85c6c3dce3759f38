-- fail: pending or processing -> failed with a message. Pending jobs can fail too (cancelled,
-- never schedulable). In a fail_fast batch the first failure stops the batch. A duplicate is a
-- no-op; a completed job cannot fail.
-- ARGV[4]: job id, ARGV[5]: error message, ARGV[6]: "1" when this is a cancellation.
-- Returns 1 when it changed the job, 0 otherwise.
local id, message, cancelled = ARGV[4], ARGV[5], ARGV[6] == '1'
local status = redis.call('HGET', key('job', id), 'status')
if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
if status == 'failed' then return 0 end
if status == 'completed' then return illegal(id, status, 'failed') end
fail_job(id, status, message, cancelled)
return 1

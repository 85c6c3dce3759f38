-- progress: records how far a processing job is and tells its SSE readers. Ignored unless the job
-- is processing (a late report after the end changes nothing).
-- ARGV[4]: job id, ARGV[5]: percent, ARGV[6]: message. Returns 1 when recorded, else 0.
local id, message = ARGV[4], ARGV[6]
local percent, bad = number_arg(ARGV[5], 'percent')
if bad then return bad end
local j = key('job', id)
if redis.call('HGET', j, 'status') ~= 'processing' then return 0 end
if percent < 0 then percent = 0 elseif percent > 100 then percent = 100 end
redis.call('HSET', j, 'progress', percent, 'updated_at', NOW_ISO)
publish(id, 'progress', { percent = percent, message = message })
return 1

--[[
  progress: records how far a processing job is and tells its SSE readers. Ignored unless the job is
  processing (a late report after the end changes nothing).

  Input:
    KEYS  job job_channel job_events

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] percent, clamped to 0-100
    ARGV[5] message

  Output:
    1 when recorded, 0 when the job is not processing

  Emits: nothing (its SSE message is on the job's channel)

  Errors:
    ERR invalid percent (not a number): nothing is written
]]
local id, message = ARGV[3], ARGV[5]
local percent, bad = number_arg(ARGV[4], 'percent')
if bad then return bad end
local j = at(K.job, id)
if redis.call('HGET', j, 'status') ~= 'processing' then return 0 end
if percent < 0 then percent = 0 elseif percent > 100 then percent = 100 end
redis.call('HSET', j, 'progress', percent, 'updated_at', NOW_ISO)
publish(id, 'progress', { percent = percent, message = message })
timeline(id, 'progress', { percent = percent, message = message ~= '' and message or nil })
return 1

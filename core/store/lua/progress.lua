--[[
  progress: records how far a processing job is, and the runner's estimate of its seconds left, and
  tells its SSE readers. Ignored unless the job is processing (a late report after the end changes
  nothing). The percent and the estimate are written together: a report without an estimate
  removes the one before. A pipeline's report also gives each step's percent (steps_progress),
  kept until the next report that gives them.

  Input:
    KEYS  job job_channel job_events

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] percent, clamped to 0-100
    ARGV[5] message
    ARGV[6] estimated seconds left, >= 0; '' for none
    ARGV[7] each step's percent, a JSON object {step: percent} (a pipeline's); '' or absent for none

  Output:
    1 when recorded, 0 when the job is not processing

  Emits: nothing (its SSE message is on the job's channel)

  Errors:
    ERR invalid percent (not a number): nothing is written
    ERR invalid eta (not a number, or below 0): nothing is written
    ERR invalid steps (not a JSON object): nothing is written
]]
local id, message = ARGV[3], ARGV[5]
local percent, bad = number_arg(ARGV[4], 'percent')
if bad then return bad end
local eta = nil
if ARGV[6] ~= nil and ARGV[6] ~= '' then
  eta, bad = number_arg(ARGV[6], 'eta', 0)
  if bad then return bad end
  eta = math.floor(eta + 0.5)
end
local steps = nil
if ARGV[7] ~= nil and ARGV[7] ~= '' then
  local ok, decoded = pcall(cjson.decode, ARGV[7])
  if not ok or type(decoded) ~= 'table' then return redis.error_reply('ERR invalid steps') end
  steps = decoded
end
local j = at(K.job, id)
if redis.call('HGET', j, 'status') ~= 'processing' then return 0 end
if percent < 0 then percent = 0 elseif percent > 100 then percent = 100 end
redis.call('HSET', j, 'progress', percent, 'updated_at', NOW_ISO)
if eta then redis.call('HSET', j, 'eta_seconds', eta) else redis.call('HDEL', j, 'eta_seconds') end
if steps then redis.call('HSET', j, 'steps_progress', ARGV[7]) end
publish(id, 'progress', { percent = percent, message = message, eta_seconds = eta, steps = steps })
timeline(id, 'progress', { percent = percent, message = message ~= '' and message or nil })
return 1

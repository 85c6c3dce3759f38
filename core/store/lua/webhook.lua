--[[
  webhook: records one delivery attempt of a job's or batch's webhook on its record and in the
  delivery counters. A final outcome (delivered, or given up) also acknowledges the event in the
  notifier's consumer group in the same step: an event is never acknowledged without its outcome
  recorded, nor recorded as finished while still pending.

  Input:
    KEYS  events webhook_stats job batch job_events

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] 'job' or 'batch'
    ARGV[4] its id
    ARGV[5] the webhook id
    ARGV[6] result: delivered, retry, failed or refused (all but retry are final)
    ARGV[7] what happened ("HTTP 503", "no response within 10 s")
    ARGV[8] HTTP status code, or ''
    ARGV[9] next attempt (epoch ms), or ''
    ARGV[10] the notifier's consumer group
    ARGV[11] the event's stream entry id

  Output:
    the attempts now recorded on the record (0 when the record has expired)

  Emits: nothing (it acknowledges events of the stream)

  Errors:
    ERR invalid record kind, ERR invalid webhook result, ERR invalid next attempt: nothing is written
]]
local kind, id, webhook_id, result, summary = ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local status_code, next_ms, group, entry = ARGV[8], ARGV[9], ARGV[10], ARGV[11]
if kind ~= 'job' and kind ~= 'batch' then return redis.error_reply('ERR invalid record kind: ' .. kind) end
local final = result ~= 'retry'
local next_at
if next_ms ~= '' then
  local err
  next_at, err = number_arg(next_ms, 'next attempt', 0)
  if not next_at then return err end
end
if result ~= 'delivered' and result ~= 'retry' and result ~= 'failed' and result ~= 'refused' then
  return redis.error_reply('ERR invalid webhook result: ' .. result)
end

redis.call('HINCRBY', K.webhook_stats, result, 1)
if final then redis.call('XACK', K.events, group, entry) end

local r = at(kind == 'job' and K.job or K.batch, id)
if redis.call('EXISTS', r) == 0 then return 0 end
local attempts = redis.call('HINCRBY', r, 'webhook_attempts', 1)
local state = 'pending'
if result == 'delivered' then state = 'delivered' elseif final then state = 'failed' end
redis.call('HSET', r, 'webhook_id', webhook_id, 'webhook_status', state, 'webhook_last_attempt_at', NOW_ISO,
  'webhook_last_result', summary)
if status_code ~= '' then
  redis.call('HSET', r, 'webhook_last_status_code', status_code)
else
  redis.call('HDEL', r, 'webhook_last_status_code')
end
if next_at and not final then
  redis.call('HSET', r, 'webhook_next_attempt_at', iso(next_at))
else
  redis.call('HDEL', r, 'webhook_next_attempt_at')
end
if result == 'delivered' then redis.call('HSET', r, 'webhook_delivered_at', NOW_ISO) end
if kind == 'job' then
  timeline(id, 'webhook', { attempt = attempts, result = result, status_code = tonumber(status_code), message = summary })
end
return attempts

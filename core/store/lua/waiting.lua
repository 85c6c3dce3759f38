--[[
  waiting: notes on an open job's timeline what its run waits for outside the controller (its
  Kubernetes Job suspended until Kueue admits it), once: nothing when the timeline's last entry says
  the same already, so a controller that sees the wait again (a reconcile, a restart) adds nothing.

  Input:
    KEYS  job job_events

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] what it waits for (the timeline's message)

  Output:
    1 when noted, 0 when not: the job is not pending or processing (or there is no such job), or
    its last timeline entry is this wait already

  Emits: nothing
]]
local id, message = ARGV[3], ARGV[4]
local status = redis.call('HGET', at(K.job, id), 'status')
if status ~= 'pending' and status ~= 'processing' then return 0 end
local last = redis.call('LINDEX', at(K.job_events, id), -1)
if last then
  local ok, entry = pcall(cjson.decode, last)
  if ok and entry.event == 'waiting' and entry.message == message then return 0 end
end
timeline(id, 'waiting', { message = message })
return 1

--[[
  partial: records what a processing job's attempt did before it failed transiently (a keep_partial
  pipeline's completed steps' results and the failed step's error), for the attempts after it. The
  job keeps it while it is retried; when the job ends failed without a result of its own (its retry
  budget spent: requeue.lua, reap.lua, fail.lua with attempts), it becomes the job's result
  (lib_ending.lua end_job). A completion drops it (complete.lua); so does a cancellation. A newer
  record replaces an older one.

  Input:
    KEYS  job

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job id
    ARGV[4] the result, a JSON object

  Output:
    1 when recorded, 0 when the job is not processing (ended meanwhile, or no such job)

  Emits: nothing

  Errors:
    ERR invalid result (not a JSON object): nothing is written
]]
local id = ARGV[3]
local ok, decoded = pcall(cjson.decode, ARGV[4])
if not ok or type(decoded) ~= 'table' then return redis.error_reply('ERR invalid result') end
local j = at(K.job, id)
if redis.call('HGET', j, 'status') ~= 'processing' then return 0 end
redis.call('HSET', j, 'partial_result', ARGV[4])
return 1

--[[
  prune: deletes finished jobs and batches whose retention has passed, with their index entries
  and their counts in the queues' counters (a client's copies of both included), and the jobs'
  entries in the search indexes.

  Input:
    KEYS  expiry job stats jobs_by_created jobs_by_status client_jobs_by_created client_jobs_by_status
          batch batch_jobs batches_by_created batches_by_status client_batches_by_created
          client_batches_by_status job_events jobs_by_type client_jobs_by_type jobs_by_state
          client_jobs_by_state client_stats jobs_by_id jobs_by_source jobs_by_dest jobs_by_request
          client_jobs_by_id client_jobs_by_source client_jobs_by_dest client_jobs_by_request

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] the most records to remove in one call

  Output:
    the number of expiry entries handled (records removed, or already gone)

  Emits: nothing
]]
local limit = tonumber(ARGV[3])
local due = redis.call('ZRANGEBYSCORE', K.expiry, '-inf', NOW, 'LIMIT', 0, limit)
for _, member in ipairs(due) do
  local kind, id = string.match(member, '^(%a+):(.*)$')
  if kind == 'job' then
    local j = at(K.job, id)
    local h = redis.call('HMGET', j, 'type', 'status', 'client', 'cancelled', 'client_admin')
    search_index('ZREM', id, h[3] or nil,
      redis.call('HMGET', j, 'source_bucket', 'source_key', 'dest_bucket', 'dest_key', 'request_id',
        'parameters'))
    if h[1] and (h[2] == 'completed' or h[2] == 'failed') then
      redis.call('HINCRBY', at(K.stats, h[1]), h[2], -1)
      if h[3] and not h[5] then redis.call('HINCRBY', at(K.client_stats, h[3], h[1]), h[2], -1) end
      redis.call('ZREM', at(K.jobs_by_status, h[2]), id)
      if h[3] then redis.call('ZREM', at(K.client_jobs_by_status, h[3], h[2]), id) end
    end
    if h[2] == 'failed' then
      local state = h[4] == '1' and 'cancelled' or 'failed'
      -- Counted in the queue's `cancelled` when it is in the state index: a job that failed before
      -- either existed is in neither.
      local indexed = redis.call('ZREM', at(K.jobs_by_state, state), id)
      if indexed == 1 and state == 'cancelled' and h[1] then
        redis.call('HINCRBY', at(K.stats, h[1]), 'cancelled', -1)
        if h[3] and not h[5] then redis.call('HINCRBY', at(K.client_stats, h[3], h[1]), 'cancelled', -1) end
      end
      if h[3] then redis.call('ZREM', at(K.client_jobs_by_state, h[3], state), id) end
    end
    redis.call('DEL', j, at(K.job_events, id))
    redis.call('ZREM', K.jobs_by_created, id)
    if h[3] then redis.call('ZREM', at(K.client_jobs_by_created, h[3]), id) end
    if h[1] then redis.call('ZREM', at(K.jobs_by_type, h[1]), id) end
    if h[1] and h[3] then redis.call('ZREM', at(K.client_jobs_by_type, h[3], h[1]), id) end
  elseif kind == 'batch' then
    local b = at(K.batch, id)
    local h = redis.call('HMGET', b, 'status', 'client')
    if h[1] then redis.call('ZREM', at(K.batches_by_status, h[1]), id) end
    if h[1] and h[2] then redis.call('ZREM', at(K.client_batches_by_status, h[2], h[1]), id) end
    redis.call('DEL', b, at(K.batch_jobs, id))
    redis.call('ZREM', K.batches_by_created, id)
    if h[2] then redis.call('ZREM', at(K.client_batches_by_created, h[2]), id) end
  end
  redis.call('ZREM', K.expiry, member)
end
return #due

-- prune: deletes finished jobs and batches whose retention has passed, with their index entries.
-- ARGV[4]: the most entries to remove in one call. Returns the number removed.
local limit = tonumber(ARGV[4])
local due = redis.call('ZRANGEBYSCORE', key('expiry'), '-inf', NOW, 'LIMIT', 0, limit)
for _, member in ipairs(due) do
  local kind, id = string.match(member, '^(%a+):(.*)$')
  if kind == 'job' then
    local j = key('job', id)
    local h = redis.call('HMGET', j, 'type', 'status', 'client')
    if h[1] and (h[2] == 'completed' or h[2] == 'failed') then
      redis.call('HINCRBY', key('stats', h[1]), h[2], -1)
      redis.call('ZREM', key('jobs', 'status', h[2]), id)
      if h[3] then redis.call('ZREM', client_index(h[3], 'jobs', 'status', h[2]), id) end
    end
    redis.call('DEL', j)
    redis.call('ZREM', key('jobs', 'by_created'), id)
    if h[3] then redis.call('ZREM', client_index(h[3], 'jobs', 'by_created'), id) end
  elseif kind == 'batch' then
    local h = redis.call('HMGET', key('batch', id), 'status', 'client')
    if h[1] then redis.call('ZREM', key('batches', 'status', h[1]), id) end
    if h[1] and h[2] then redis.call('ZREM', client_index(h[2], 'batches', 'status', h[1]), id) end
    redis.call('DEL', key('batch', id), key('batch', id) .. ':jobs')
    redis.call('ZREM', key('batches', 'by_created'), id)
    if h[2] then redis.call('ZREM', client_index(h[2], 'batches', 'by_created'), id) end
  end
  redis.call('ZREM', key('expiry'), member)
end
return #due

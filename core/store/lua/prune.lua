-- prune: deletes finished jobs and batches whose retention has passed, with their index entries.
-- ARGV[4]: the most entries to remove in one call. Returns the number removed.
local limit = tonumber(ARGV[4])
local due = redis.call('ZRANGEBYSCORE', key('expiry'), '-inf', NOW, 'LIMIT', 0, limit)
for _, member in ipairs(due) do
  local kind, id = string.match(member, '^(%a+):(.*)$')
  if kind == 'job' then
    local j = key('job', id)
    local h = redis.call('HMGET', j, 'type', 'status')
    if h[1] and (h[2] == 'completed' or h[2] == 'failed') then
      redis.call('HINCRBY', key('stats', h[1]), h[2], -1)
      redis.call('ZREM', key('jobs', 'status', h[2]), id)
    end
    redis.call('DEL', j)
    redis.call('ZREM', key('jobs', 'by_created'), id)
  elseif kind == 'batch' then
    local status = redis.call('HGET', key('batch', id), 'status')
    if status then redis.call('ZREM', key('batches', 'status', status), id) end
    redis.call('DEL', key('batch', id), key('batch', id) .. ':jobs')
    redis.call('ZREM', key('batches', 'by_created'), id)
  end
  redis.call('ZREM', key('expiry'), member)
end
return #due

--[[
  claim: takes a job of the first queue among the types given, in their order, that has one a client
  may take, for an executor, under a lease. Within a queue clients share by fair share
  (core/jobs/fair-share.ts, fair_pick below): of the clients with waiting jobs and below their
  max_running, those whose next job has the highest priority take turns, `weight` jobs each, in the
  order of their names; a client's own jobs go in its queue's order (the highest priority, the
  earliest submitted of it; see lib.lua queue_score). The job stays pending until its work really
  starts (start.lua), and counts among its client's running from now on (lib.lua hold). Entries
  whose job is gone or no longer pending (pruned, cancelled) are dropped on the way. One call tries
  every type a dispatcher has room for, instead of one round trip per type. O(clients) per queue.

  Input:
    KEYS  pending active job queue_seq job_events history client_stats fair_queue fair_clients
          fair_turn client_load

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] job types to try, in order, separated by commas
    ARGV[4] lease, in ms
    ARGV[5] owner (who claims: recorded as claimed_by)
    ARGV[6] JSON {<client>: {weight?, max_running?}}: the clients' settings (server.clients) that are
            not the defaults (weight 1, no limit); absent: none

  Output:
    { job id, job type }, or nil when none of the queues has a pending job a client may take

  Emits: nothing

  Errors:
    ERR invalid lease (below 1 ms, or not a number): nothing is taken
]]
local owner = ARGV[5]
local lease_ms, bad = number_arg(ARGV[4], 'lease', 1)
if bad then return bad end
local settings = cjson.decode(ARGV[6] or '{}')

local function setting(client, name)
  local s = settings[client]
  return s and tonumber(s[name]) or nil
end

-- fair-share.ts turnLength: at least 1 and whole.
local function turn_length(client)
  local w = setting(client, 'weight')
  if not w or w ~= w or w == math.huge or w == -math.huge then return 1 end
  return math.max(1, math.floor(w))
end

-- The clients of a type's queue that may take a job now, each with the priority of its next job.
local function contenders(type)
  local list = {}
  for _, client in ipairs(redis.call('SMEMBERS', at(K.fair_clients, type))) do
    local head = redis.call('ZRANGE', at(K.fair_queue, type, client), 0, 0)[1]
    local limit = setting(client, 'max_running')
    if not head then
      redis.call('SREM', at(K.fair_clients, type), client)
    elseif not limit or (tonumber(redis.call('HGET', K.client_load, client .. '|running')) or 0) < limit then
      local priority = tonumber(redis.call('HGET', at(K.job, head), 'priority')) or 0
      list[#list + 1] = { client = client, priority = priority }
    end
  end
  return list
end

-- fair-share.ts pickClient, its turn kept in the type's fair_turn.
local function fair_pick(type, list)
  if #list == 0 then return nil end
  local top = list[1].priority
  for _, c in ipairs(list) do
    if c.priority > top then top = c.priority end
  end
  local level = {}
  for _, c in ipairs(list) do
    if c.priority == top then level[#level + 1] = c.client end
  end
  -- Names in byte order (lib.lua sorts_before), as fair-share.ts compareNames.
  table.sort(level, sorts_before)
  local key = at(K.fair_turn, type)
  local t = redis.call('HMGET', key, 'client', 'left')
  local turn, left = t[1], tonumber(t[2]) or 0
  if turn and left > 0 then
    for _, client in ipairs(level) do
      if client == turn then
        redis.call('HSET', key, 'left', left - 1)
        return client
      end
    end
  end
  local chosen = level[1]
  if turn then
    for _, client in ipairs(level) do
      if sorts_before(turn, client) then
        chosen = client
        break
      end
    end
  end
  redis.call('HSET', key, 'client', chosen, 'left', turn_length(chosen) - 1)
  return chosen
end

for type in string.gmatch(ARGV[3], '[^,]+') do
  local queue = pending_queue(type)
  while true do
    local client = fair_pick(type, contenders(type))
    if not client then break end
    local id = redis.call('ZRANGE', at(K.fair_queue, type, client), 0, 0)[1]
    fair_remove(id, type, client)
    local removed = redis.call('ZREM', queue, id)
    local j = at(K.job, id)
    if redis.call('HGET', j, 'status') == 'pending' then
      redis.call('ZADD', at(K.active, type), NOW + lease_ms, id)
      redis.call('HSET', j, 'claimed_by', owner, 'lease_until', NOW + lease_ms)
      hold(id)
      timeline(id, 'claimed', { message = owner })
      if removed == 1 then note_depth(type, -1, id) end
      return { id, type }
    end
  end
end
return nil

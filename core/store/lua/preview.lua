--[[
  preview: caches a preview of a job's source or output (api/previews.ts), keeping at most a given
  number of them: a cache, not a record. The API reads a preview with a plain GET; the entry lives
  ARGV[6] ms, and when more than ARGV[7] previews are cached the oldest are deleted, so the cache's
  memory is bounded whatever the traffic (ARGV[7] times the largest preview cached).

  Input:
    KEYS  preview preview_index

    ARGV[1], ARGV[2]  lib.lua's (unused here)
    ARGV[3] the job id
    ARGV[4] 'source' or 'output'
    ARGV[5] the preview's bytes
    ARGV[6] how long it is kept, in ms
    ARGV[7] how many previews the cache keeps at most

  Output:
    the number of previews deleted to make room (expired ones not counted)

  Emits: nothing

  Errors:
    ERR invalid ttl ms: <value>, ERR invalid max entries: <value>, ERR invalid of: <value>
]]
local id, of, bytes = ARGV[3], ARGV[4], ARGV[5]
local ttl_ms, invalid = number_arg(ARGV[6], 'ttl ms', 1)
if invalid then return invalid end
local max_entries, invalid_max = number_arg(ARGV[7], 'max entries', 1)
if invalid_max then return invalid_max end
if of ~= 'source' and of ~= 'output' then return redis.error_reply('ERR invalid of: ' .. tostring(of)) end

local now = now_ms()
redis.call('SET', at(K.preview, id, of), bytes, 'PX', math.floor(ttl_ms))
redis.call('ZADD', K.preview_index, now, id .. ':' .. of)
-- Entries older than the TTL have expired on their own: only their index members are left.
redis.call('ZREMRANGEBYSCORE', K.preview_index, '-inf', '(' .. (now - ttl_ms))
local excess = redis.call('ZCARD', K.preview_index) - max_entries
if excess <= 0 then return 0 end
local oldest = redis.call('ZRANGE', K.preview_index, 0, excess - 1)
for _, member in ipairs(oldest) do
  local colon = string.find(member, ':[^:]*$')
  redis.call('DEL', at(K.preview, string.sub(member, 1, colon - 1), string.sub(member, colon + 1)))
end
redis.call('ZREMRANGEBYRANK', K.preview_index, 0, excess - 1)
return #oldest

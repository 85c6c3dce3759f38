--[[
  template: stores a new version of a client's template, or deletes the template (api/routes/
  templates.ts). A template is a hash at template (owner, name):
    current   the version the name stands for now (absent once deleted)
    last      the highest version ever stored: kept after a delete, so that a name and version
              never stand for two templates (a job records the version it used)
    <n>       version n's body, JSON as the API validated it (type, parameters, overridable, …)
    <n>:at    when version n was stored (ISO 8601)
  The newest versions, as many as ARGV[8], stay readable until the template is deleted; storing one
  more drops the oldest (a job keeps the parameters it resolved, not a reference). The owner's
  names are in templates (owner), a sorted set with every score 0, so that they list in name order.

  Input:
    KEYS  template templates

    ARGV[1], ARGV[2]  lib.lua's (unused here)
    ARGV[3] 'put' or 'delete'
    ARGV[4] the owner: the client's name, '-' without authentication
    ARGV[5] the template's name
    ARGV[6] put: the body of the new version (JSON)
    ARGV[7] put: the most templates the owner may have (a new name beyond them is refused)
    ARGV[8] put: the versions kept of a template

  Output:
    put: { version, created } the new version's number (the highest before it plus one) and 1 when
      the name stood for no template before (its first version, or the first after a delete), else 0;
      or { 0, count } when the name is new and the owner already has ARGV[7] templates (count):
      nothing is written
    delete: the version the name stood for, now deleted, or 0 when it stood for none

  Emits: nothing

  Errors:
    ERR invalid operation: <value>, ERR invalid body: <value>
]]
local op, owner, name = ARGV[3], ARGV[4], ARGV[5]
local key = at(K.template, owner, name)
local names = at(K.templates, owner)

if op == 'put' then
  local body = ARGV[6]
  if not body or string.sub(body, 1, 1) ~= '{' then
    return redis.error_reply('ERR invalid body: ' .. tostring(body))
  end
  local most, keep = tonumber(ARGV[7]), tonumber(ARGV[8])
  if not most or most < 1 or not keep or keep < 1 then
    return redis.error_reply('ERR invalid limits: ' .. tostring(ARGV[7]) .. ', ' .. tostring(ARGV[8]))
  end
  local held = redis.call('HMGET', key, 'current', 'last')
  if not held[1] then
    local count = redis.call('ZCARD', names)
    if count >= most then return { 0, count } end
  end
  local version = (tonumber(held[2]) or 0) + 1
  redis.call('HSET', key, tostring(version), body, version .. ':at', NOW_ISO, 'current', version, 'last', version)
  redis.call('ZADD', names, 0, name)
  -- The oldest beyond the kept ones (several once the setting was lowered: they go down to a gap).
  local old = version - keep
  while old > 0 and redis.call('HDEL', key, tostring(old), old .. ':at') > 0 do old = old - 1 end
  return { version, held[1] and 0 or 1 }
end
if op ~= 'delete' then return redis.error_reply('ERR invalid operation: ' .. tostring(op)) end

local held = redis.call('HMGET', key, 'current', 'last')
if not held[1] then return 0 end
redis.call('DEL', key)
redis.call('HSET', key, 'last', held[2])
redis.call('ZREM', names, name)
return tonumber(held[1])

-- submit: records new jobs, pending, at the tail of their queues; optionally as one batch. All or
-- nothing: an id already taken fails the whole call before anything is written.
-- ARGV[4]: JSON {client?, admin?, batch?: {id, fail_fast, webhook_url}, jobs: [{id, type, fields: {..}}]};
-- client: the name of the submitting client, recorded on every job and the batch, and indexed for it
-- unless admin is true (an admin lists through the shared indexes; its records carry client_admin=1).
-- Returns the queue position of each job, in order.
local payload = cjson.decode(ARGV[4])
local batch = payload.batch
local client = payload.client
if client == cjson.null then client = nil end
-- Whose own indexes get copies of the new records (lib.lua client_index): a client that is not an admin.
local indexed = client and payload.admin ~= true
if #payload.jobs == 0 then return redis.error_reply('ERR a submission needs at least one job') end
if batch and redis.call('EXISTS', key('batch', batch.id)) == 1 then
  return redis.error_reply('CONFLICT batch ' .. batch.id .. ' already exists')
end
for _, job in ipairs(payload.jobs) do
  if redis.call('EXISTS', key('job', job.id)) == 1 then
    return redis.error_reply('CONFLICT job ' .. job.id .. ' already exists')
  end
end

local positions = {}
for i, job in ipairs(payload.jobs) do
  local j = key('job', job.id)
  local fields = { 'id', job.id, 'type', job.type, 'status', 'pending', 'created_at', NOW_ISO,
    'updated_at', NOW_ISO, 'created_ms', NOW, 'seq', 0, 'attempts', 0 }
  for name, value in pairs(job.fields) do
    fields[#fields + 1] = name
    fields[#fields + 1] = value
  end
  if batch then
    fields[#fields + 1] = 'batch_id'
    fields[#fields + 1] = batch.id
  end
  if client then
    fields[#fields + 1] = 'client'
    fields[#fields + 1] = client
    if not indexed then
      fields[#fields + 1] = 'client_admin'
      fields[#fields + 1] = '1'
    end
  end
  redis.call('HSET', j, unpack(fields))
  positions[i] = redis.call('RPUSH', key('queue', job.type, 'pending'), job.id)
  count(job.type, nil, 'pending', 'submitted_total')
  redis.call('ZADD', key('jobs', 'by_created'), NOW, job.id)
  redis.call('ZADD', key('jobs', 'status', 'pending'), NOW, job.id)
  if indexed then
    redis.call('ZADD', client_index(client, 'jobs', 'by_created'), NOW, job.id)
    redis.call('ZADD', client_index(client, 'jobs', 'status', 'pending'), NOW, job.id)
  end
  record('job.created', { job_id = job.id, type = job.type, batch_id = batch and batch.id, status = 'pending' })
end

if batch then
  local b = key('batch', batch.id)
  redis.call('HSET', b, 'id', batch.id, 'status', 'queued', 'total_jobs', #payload.jobs,
    'pending', #payload.jobs, 'processing', 0, 'completed', 0, 'failed', 0,
    'fail_fast', batch.fail_fast and '1' or '0', 'created_at', NOW_ISO, 'updated_at', NOW_ISO, 'created_ms', NOW)
  if batch.webhook_url then redis.call('HSET', b, 'webhook_url', batch.webhook_url) end
  if client then redis.call('HSET', b, 'client', client) end
  if client and not indexed then redis.call('HSET', b, 'client_admin', '1') end
  for _, job in ipairs(payload.jobs) do redis.call('RPUSH', b .. ':jobs', job.id) end
  redis.call('ZADD', key('batches', 'by_created'), NOW, batch.id)
  redis.call('ZADD', key('batches', 'status', 'queued'), NOW, batch.id)
  if indexed then
    redis.call('ZADD', client_index(client, 'batches', 'by_created'), NOW, batch.id)
    redis.call('ZADD', client_index(client, 'batches', 'status', 'queued'), NOW, batch.id)
  end
  record('batch.created', { batch_id = batch.id, status = 'queued', total_jobs = #payload.jobs })
end
-- Wakes idle executors at once rather than at their next poll.
redis.call('PUBLISH', key('queues'), 'submitted')
return positions

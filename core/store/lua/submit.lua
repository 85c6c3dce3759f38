--[[
  submit: records new jobs, pending, in their queues after every job of their priority (field
  `priority`, default 0; lib.lua queue_score); optionally as one batch. All or nothing: an id already
  taken fails the whole call before anything is written.

  Input:
    KEYS  job pending stats jobs_by_created jobs_by_status client_jobs_by_created
          client_jobs_by_status batch batch_jobs batches_by_created batches_by_status
          client_batches_by_created client_batches_by_status events queues queue_seq idempotency
          job_events history jobs_by_type client_jobs_by_type client_stats jobs_by_id jobs_by_source
          jobs_by_dest jobs_by_request client_jobs_by_id client_jobs_by_source client_jobs_by_dest
          client_jobs_by_request fair_queue fair_clients fair_turn client_load client_refused

    ARGV[1], ARGV[2]  lib.lua's (events stream length, retention)
    ARGV[3] JSON {client?, admin?, max_pending?, batch?: {id, shown_id, fail_fast, webhook_url?}, jobs: [{id, type, fields}],
      idempotency?: {client, key, fingerprint, token, ttl_ms}, retry?: {of, force?}}:
      client, the name of the submitting client, is recorded on every job and the batch, and they are
      indexed for it unless admin is true (an admin lists through the shared indexes; its records
      carry client_admin=1); batch.id is the id the batch is stored under (keys.ts storedBatchId:
      a client's own ids kept apart from every other client's), shown_id the id its client gave;
      fields are the job hash's fields, from its JobSpec (core/jobs/spec.ts);
      idempotency: the Idempotency-Key this request took (idempotency.lua: its client, its key's
      SHA-256, the request's fingerprint and token), whose lock becomes the completed record, kept
      ttl_ms, holding the result {job_ids, types, queue_positions, batch_id?} (batch_id as shown)
      retry: the submission is the one job retrying failed job `of` (POST /jobs/{id}/retry), which
      records it as its `retried_as` in the same step. A job retried before is not retried again
      unless force is true: the answer names its retry instead, and nothing is written; so
      concurrent retries of one job make one retry. A forced retry makes `retried_as` the newest.
      max_pending: the client's server.clients max_pending, when it has one: how many of its jobs may
      wait in the queues (lib.lua client_load) with this submission's

  Output:
    the queue position (1-based) of each job, in order: how many jobs of its queue are before it once
    the whole submission is queued, itself included; or, for a retry of a job retried before (and
    not forced), {"retried", <the id of its retry>}

  Emits: job.created for each job; batch.created for a batch

  Errors:
    CONFLICT batch <shown_id> already exists (among the client's own), CONFLICT job <id> already exists
    NOTFOUND job <id> does not exist (the job a retry retries)
    ILLEGAL job <id> is <status>, cannot become retried (a retry of a job that has not failed)
    CONFLICT the Idempotency-Key is in use by another request (its lock ran out and was taken again)
    ERR invalid idempotency ttl_ms: <value>
    ERR a submission needs at least one job
    LIMIT client "<name>" has <n> jobs pending and submits <m>, over its server.clients max_pending
      of <limit> (nothing is written)
]]
local payload = cjson.decode(ARGV[3])
local batch = payload.batch
local client = payload.client
if client == cjson.null then client = nil end
-- Whose own indexes get copies of the new records (lib.lua move_index): a client that is not an admin.
local indexed = client and payload.admin ~= true
if #payload.jobs == 0 then return redis.error_reply('ERR a submission needs at least one job') end
if batch and redis.call('EXISTS', at(K.batch, batch.id)) == 1 then
  return redis.error_reply('CONFLICT batch ' .. (batch.shown_id or batch.id) .. ' already exists')
end
for _, job in ipairs(payload.jobs) do
  if redis.call('EXISTS', at(K.job, job.id)) == 1 then
    return redis.error_reply('CONFLICT job ' .. job.id .. ' already exists')
  end
end
-- A retry: of a failed job, and once unless forced.
local retry = payload.retry
if retry then
  if #payload.jobs ~= 1 or batch then return redis.error_reply('ERR a retry is one job, not a batch') end
  local h = redis.call('HMGET', at(K.job, retry.of), 'status', 'retried_as')
  if not h[1] then return redis.error_reply('NOTFOUND job ' .. retry.of .. ' does not exist') end
  if h[1] ~= 'failed' then return illegal(retry.of, h[1], 'retried') end
  if h[2] and h[2] ~= '' and retry.force ~= true then return { 'retried', h[2] } end
end
-- Idempotency-Key: the record must still be this request's lock (or gone, its lock having run out).
local idem, idem_key, idem_ttl = payload.idempotency, nil, nil
if idem then
  local invalid
  idem_ttl, invalid = number_arg(idem.ttl_ms, 'idempotency ttl_ms', 1)
  if invalid then return invalid end
  idem_key = at(K.idempotency, idem.client, idem.key)
  local held = redis.call('HMGET', idem_key, 'state', 'token')
  if held[1] and not (held[1] == 'locked' and held[2] == idem.token) then
    return redis.error_reply('CONFLICT the Idempotency-Key is in use by another request')
  end
end

-- The client's max_pending (server.clients): a submission that would leave more of its jobs waiting
-- in the queues than that is refused whole, and counted (client_refused).
local max_pending = tonumber(payload.max_pending)
if max_pending then
  local who = client or '-'
  local waiting = tonumber(redis.call('HGET', K.client_load, who .. '|pending')) or 0
  if waiting + #payload.jobs > max_pending then
    redis.call('HINCRBY', K.client_refused, who .. '|max_pending', 1)
    return redis.error_reply('LIMIT client "' .. who .. '" has ' .. waiting .. ' jobs pending and submits ' ..
      #payload.jobs .. ', over its server.clients max_pending of ' .. max_pending)
  end
end

local positions = {}
for _, job in ipairs(payload.jobs) do
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
  fields[#fields + 1] = 'queue_seq'
  fields[#fields + 1] = redis.call('INCR', K.queue_seq)
  redis.call('HSET', at(K.job, job.id), unpack(fields))
  enqueue(job.id, job.type)
  timeline(job.id, 'submitted', { priority = tonumber(job.fields.priority) })
  count(job.type, nil, 'pending', 'submitted_total', job.id)
  -- Submitted with a template (media_jobs_from_template_total): everyone's counter only.
  if job.fields.template then redis.call('HINCRBY', at(K.stats, job.type), 'template_total', 1) end
  redis.call('ZADD', K.jobs_by_created, NOW, job.id)
  redis.call('ZADD', at(K.jobs_by_status, 'pending'), NOW, job.id)
  redis.call('ZADD', at(K.jobs_by_type, job.type), NOW, job.id)
  if indexed then
    redis.call('ZADD', at(K.client_jobs_by_created, client), NOW, job.id)
    redis.call('ZADD', at(K.client_jobs_by_status, client, 'pending'), NOW, job.id)
    redis.call('ZADD', at(K.client_jobs_by_type, client, job.type), NOW, job.id)
  end
  local f = job.fields
  search_index('ZADD', job.id, indexed and client or nil,
    { f.source_bucket, f.source_key, f.dest_bucket, f.dest_key, f.request_id, f.parameters })
  record('job.created', { job_id = job.id, type = job.type, batch_id = batch and batch.id, status = 'pending' })
end

if retry then
  local new_id = payload.jobs[1].id
  redis.call('HSET', at(K.job, retry.of), 'retried_as', new_id)
  redis.call('HSET', at(K.job, retry.of), 'updated_at', NOW_ISO)
  timeline(retry.of, 'retried', { message = new_id })
end

for i, job in ipairs(payload.jobs) do
  positions[i] = redis.call('ZRANK', at(K.pending, job.type), job.id) + 1
end

if batch then
  local b = at(K.batch, batch.id)
  redis.call('HSET', b, 'id', batch.id, 'status', 'queued', 'total_jobs', #payload.jobs,
    'pending', #payload.jobs, 'processing', 0, 'completed', 0, 'failed', 0,
    'fail_fast', batch.fail_fast and '1' or '0', 'created_at', NOW_ISO, 'updated_at', NOW_ISO, 'created_ms', NOW)
  if batch.webhook_url then redis.call('HSET', b, 'webhook_url', batch.webhook_url) end
  if client then redis.call('HSET', b, 'client', client) end
  if client and not indexed then redis.call('HSET', b, 'client_admin', '1') end
  local batch_jobs = at(K.batch_jobs, batch.id)
  for _, job in ipairs(payload.jobs) do redis.call('RPUSH', batch_jobs, job.id) end
  redis.call('ZADD', K.batches_by_created, NOW, batch.id)
  redis.call('ZADD', at(K.batches_by_status, 'queued'), NOW, batch.id)
  if indexed then
    redis.call('ZADD', at(K.client_batches_by_created, client), NOW, batch.id)
    redis.call('ZADD', at(K.client_batches_by_status, client, 'queued'), NOW, batch.id)
  end
  record('batch.created', { batch_id = batch.id, status = 'queued', total_jobs = #payload.jobs })
end
-- Idempotency-Key: the lock becomes the completed record, written with the jobs, so that an answer
-- lost after this point (a crash, a cut connection) is replayed rather than submitted again.
if idem then
  local job_ids, types = {}, {}
  for i, job in ipairs(payload.jobs) do
    job_ids[i] = job.id
    types[i] = job.type
  end
  local result = {
    job_ids = job_ids, types = types, queue_positions = positions, batch_id = batch and (batch.shown_id or batch.id),
  }
  redis.call('DEL', idem_key)
  redis.call('HSET', idem_key, 'state', 'done', 'fingerprint', idem.fingerprint, 'result', cjson.encode(result))
  redis.call('PEXPIRE', idem_key, math.floor(idem_ttl))
end
-- Wakes idle executors at once rather than at their next poll.
redis.call('PUBLISH', K.queues, 'submitted')
return positions

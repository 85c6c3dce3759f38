--[[
  lib: what the transition scripts share, prepended to each of them (and lib_ending.lua after it,
  whose functions this header describes too: fail_job, cancel_job, requeue_job and theirs). In
  front of it scripts.ts puts K, the script's KEYS by family name, built from the script's header
  (keys.ts describes the families: a key name with '*' where an id goes, or a single key).

  Input:
    KEYS: none of its own. A function here reads the families it needs from K, so a script that
      calls it declares them in its header:
        publish             job, job_channel
        record              events, job (a job's event names its client)
        count               stats, and job and client_stats when given a job id
        move_status_index   job, jobs_by_status, client_jobs_by_status
        batch_move          batch
        set_batch_status    batch, batches_by_status, client_batches_by_status
        finalize_batch      expiry, events and set_batch_status's
        timeline            job_events
        note_ended          history (and job, client_stats when given a job id)
        note_depth          pending, history (and job, client_stats when given a job id)
        fair_add, fair_remove  job, fair_queue, fair_clients, client_load
        hold, release       job, client_load
        pending_queue       pending, queue_seq, job, fair_turn and fair_add's
        enqueue             pending_queue's, note_depth's
        fail_job            pending, active, expiry, batch_jobs, jobs_by_state, client_jobs_by_state
                            and those of publish, record, count, move_status_index, finalize_batch,
                            timeline, note_ended, note_depth, fair_remove, release
        cancel_job          fail_job's
        requeue_job         fail_job's and enqueue's (a job past its retry budget fails)
        search_index        jobs_by_id, jobs_by_source, jobs_by_dest, jobs_by_request and their
                            client_ copies

    ARGV[1] the length the events stream is trimmed to (approximately)
    ARGV[2] how long finished jobs and batches are kept, in ms
    A script's own arguments start at ARGV[3].

  Emits: the events a function records on the events stream (record; events.ts types them), its
    own and those of the functions it calls, so a script that calls it names them in its header:
        finalize_batch      batch.completed (the batch's last job has ended)
        stop_batch          job.cancelled for the fail_fast batch's other unfinished jobs
                            (cancel_job), and cancel_job's batch.completed
        ended_in_batch      job.cancelled (stop_batch), batch.completed (finalize_batch)
        fail_job            job.failed, and ended_in_batch's job.cancelled, batch.completed
        cancel_job          job.cancelled, and ended_in_batch's batch.completed
        requeue_job         job.requeued, or fail_job's job.failed, job.cancelled, batch.completed

  Output: nothing; the functions below answer as their comments say. Refusals are error replies
    starting with a code word that errors.ts turns into typed errors:
      ILLEGAL job <id> is <status>, cannot become <status>
      NOTFOUND job <id> does not exist
      ERR invalid <argument>: <value>
]]
local EVENTS_MAXLEN = tonumber(ARGV[1])
local RETENTION_MS = tonumber(ARGV[2])

-- A key of a family: its '*'s filled with the ids, in order (keys.ts keyOf).
local function at(family, ...)
  local ids = { ... }
  local pieces, from = {}, 1
  for i = 1, #ids do
    local star = string.find(family, '*', from, true)
    if not star then error('key family ' .. family .. ' takes fewer than ' .. #ids .. ' ids') end
    pieces[#pieces + 1] = string.sub(family, from, star - 1)
    pieces[#pieces + 1] = ids[i]
    from = star + 1
  end
  if string.find(family, '*', from, true) then error('key family ' .. family .. ' takes more ids') end
  pieces[#pieces + 1] = string.sub(family, from)
  return table.concat(pieces)
end

-- A member of the expiry set: what is due ('job' or 'batch') and its id.
local function expiry_member(kind, id) return kind .. ':' .. id end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- ISO 8601 UTC with milliseconds, from epoch milliseconds (days-to-civil, H. Hinnant).
local function iso(ms)
  local s = math.floor(ms / 1000)
  local days = math.floor(s / 86400)
  local rem = s % 86400
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = mp < 10 and mp + 3 or mp - 9
  if m <= 2 then y = y + 1 end
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', y, m, d,
    math.floor(rem / 3600), math.floor((rem % 3600) / 60), rem % 60, ms % 1000)
end

local NOW = now_ms()
local NOW_ISO = iso(NOW)

local function illegal(id, from, to)
  return redis.error_reply('ILLEGAL job ' .. id .. ' is ' .. tostring(from) .. ', cannot become ' .. to)
end

-- Every change of a job is numbered (seq), so an SSE reader can drop what its snapshot already holds.
-- Messages carry no result: a reader of `complete` reads it from the job (cjson would turn [] into {}).
-- The messages are typed in events.ts (JobChannelMessage).
local function publish(id, event, data)
  local seq = redis.call('HINCRBY', at(K.job, id), 'seq', 1)
  redis.call('PUBLISH', at(K.job_channel, id), cjson.encode({ seq = seq, event = event, data = data }))
end

-- The durable events stream, read by the notifier (webhooks) through a consumer group. A job's
-- terminal event carries webhook=1 when the job has a webhook_url, so the notifier reads only those.
-- Every event and its fields are typed in events.ts (StoreEvent).
local function record(event, fields)
  local args = { 'XADD', K.events, 'MAXLEN', '~', EVENTS_MAXLEN, '*', 'event', event, 'at', NOW_ISO }
  -- Who may see a job's event (GET /events): the client that submitted the job, unless an admin did.
  if fields.job_id then
    local owner = redis.call('HMGET', at(K.job, fields.job_id), 'client', 'client_admin')
    if owner[1] and not owner[2] then fields.client = owner[1] end
  end
  for k, v in pairs(fields) do
    if v ~= nil and v ~= false and v ~= '' then
      args[#args + 1] = k
      args[#args + 1] = tostring(v)
    end
  end
  redis.call(unpack(args))
end

-- A job's timeline (GET /jobs/{id}/events): what happened to it, oldest first, one JSON object
-- {at, event, ...} per entry. A progress report replaces a progress entry just before it, so a
-- timeline stays short however often a runner reports; prune.lua deletes it with its job.
local function timeline(id, event, fields)
  local entry = fields or {}
  entry.at = NOW_ISO
  entry.event = event
  local key = at(K.job_events, id)
  local text = cjson.encode(entry)
  if event == 'progress' then
    local last = redis.call('LINDEX', key, -1)
    if last and string.find(last, '"event":"progress"', 1, true) then
      redis.call('LSET', key, -1, text)
      return
    end
  end
  redis.call('RPUSH', key, text)
end

-- Figures per minute for the last day (GET /stats/history), one hash per minute: per job type, the
-- jobs that ended (<type>:completed, <type>:failed, and of the failed <type>:cancelled), the durations of the completed ones as
-- cumulative histogram buckets (<type>:b<i>, the bounds of the duration histogram), and the depth of
-- its queue after its last change in that minute (<type>:pending) and before its first
-- (<type>:pending_before), so that the depth is known for the minutes before a first change too.
local HISTORY_KEEP_MS = 25 * 3600 * 1000
local function history_minute()
  local key = at(K.history, tostring(math.floor(NOW / 60000)))
  redis.call('PEXPIRE', key, HISTORY_KEEP_MS)
  return key
end

-- The client whose own figures a job's changes count in too (client_stats, and its fields of the
-- minute hashes: "<client>|<type>:…", a client name holding no "|"): the job's owner unless an admin
-- submitted it; nil for an admin's job or one submitted without a client.
local function owner_of(id)
  local owner = redis.call('HMGET', at(K.job, id), 'client', 'client_admin')
  if owner[1] and not owner[2] then return owner[1] end
  return nil
end

-- With the job's id (declaring job and client_stats), its client's fields are counted too.
local function note_ended(type, outcome, duration, bounds, id)
  local key = history_minute()
  local client = id and owner_of(id)
  for _, prefix in ipairs(client and { '', client .. '|' } or { '' }) do
    redis.call('HINCRBY', key, prefix .. type .. ':' .. outcome, 1)
    if duration and bounds then
      for i, bound in ipairs(bounds) do
        if duration <= bound then redis.call('HINCRBY', key, prefix .. type .. ':b' .. i, 1) end
      end
    end
  end
end

-- `change`: how the depth just changed (+1 a job queued, -1 one taken out). With the job's id
-- (declaring job and client_stats), its client's depth too: how many of its jobs wait in the queue
-- (field `queued` of its client_stats, changed here only).
local function note_depth(type, change, id)
  local queue = at(K.pending, type)
  local depth = redis.call('TYPE', queue).ok == 'list' and redis.call('LLEN', queue) or redis.call('ZCARD', queue)
  local key = history_minute()
  redis.call('HSETNX', key, type .. ':pending_before', depth - change)
  redis.call('HSET', key, type .. ':pending', depth)
  local client = id and owner_of(id)
  if client then
    local own = redis.call('HINCRBY', at(K.client_stats, client, type), 'queued', change)
    redis.call('HSETNX', key, client .. '|' .. type .. ':pending_before', own - change)
    redis.call('HSET', key, client .. '|' .. type .. ':pending', own)
  end
end

-- Moves a job or batch from one status index to another. A record submitted by a client carries its
-- name (field `client`), and a client that is not an admin has its own copies of the indexes, so that
-- it lists its own jobs and batches with the same reads (and totals) as an admin lists all of them.
-- An admin's records (field `client_admin`) are in the shared indexes only.
local function move_index(record_key, by_status, client_by_status, id, from, to, created_ms)
  if from then redis.call('ZREM', at(by_status, from), id) end
  redis.call('ZADD', at(by_status, to), created_ms, id)
  local owner = redis.call('HMGET', record_key, 'client', 'client_admin')
  local client = owner[1]
  if client and not owner[2] then
    if from then redis.call('ZREM', at(client_by_status, client, from), id) end
    redis.call('ZADD', at(client_by_status, client, to), created_ms, id)
  end
end

local function move_status_index(id, from, to, created_ms)
  move_index(at(K.job, id), K.jobs_by_status, K.client_jobs_by_status, id, from, to, created_ms)
end

-- A queue's counters, moved from one status to another; with the job's id, its client's own copy too
-- (GET /queue/stats for a client that is not an admin: client_stats), in the same call, so the two
-- cannot drift. An admin's jobs, and those submitted without a client, are in the shared ones only.
local function count(type, from, to, total_field, id)
  local keys = { at(K.stats, type) }
  local client = id and owner_of(id)
  if client then keys[2] = at(K.client_stats, client, type) end
  for _, stats in ipairs(keys) do
    if from then redis.call('HINCRBY', stats, from, -1) end
    redis.call('HINCRBY', stats, to, 1)
    if total_field then redis.call('HINCRBY', stats, total_field, 1) end
  end
end

local function batch_move(batch_id, from, to)
  if not batch_id or batch_id == '' then return end
  local b = at(K.batch, batch_id)
  if redis.call('EXISTS', b) == 0 then return end
  redis.call('HINCRBY', b, from, -1)
  redis.call('HINCRBY', b, to, 1)
  redis.call('HSET', b, 'updated_at', NOW_ISO)
end

local function set_batch_status(batch_id, from, to)
  local b = at(K.batch, batch_id)
  local created_ms = redis.call('HGET', b, 'created_ms')
  redis.call('HSET', b, 'status', to, 'updated_at', NOW_ISO)
  move_index(b, K.batches_by_status, K.client_batches_by_status, batch_id, from, to, created_ms)
end

-- When every job of the batch is finished: completed (all succeeded), failed (none did) or partial.
local function finalize_batch(batch_id)
  local b = at(K.batch, batch_id)
  local h = redis.call('HMGET', b, 'status', 'total_jobs', 'completed', 'failed', 'webhook_url')
  local status, total, completed, failed = h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  if not status or status == 'completed' or status == 'failed' or status == 'partial' then return end
  if completed + failed < total then return end
  local final = 'partial'
  if failed == 0 then final = 'completed' elseif completed == 0 then final = 'failed' end
  set_batch_status(batch_id, status, final)
  redis.call('HSET', b, 'completed_at', NOW_ISO)
  redis.call('ZADD', K.expiry, NOW + RETENTION_MS, expiry_member('batch', batch_id))
  record('batch.completed', {
    batch_id = batch_id, status = final, total_jobs = total, completed = completed, failed = failed,
    webhook_url = h[5],
  })
end

-- Adds a job to the search indexes (op 'ZADD') or removes it ('ZREM'): its id, its source and output
-- ("bucket/key") and its request_id, each as "<value>\0<id>" in a sorted set of score 0 read by
-- prefix (keys.ts); `client`: also that client's copies. `h`: the job's source_bucket, source_key,
-- dest_bucket, dest_key, request_id and parameters (nil when it has none). A job without a dest_key
-- whose parameters name a dest_prefix (a pipeline's steps write under it) is found by its output as
-- "bucket/prefix/".
local function search_index(op, id, client, h)
  local dest = h[4]
  if not dest and h[3] and h[6] and string.find(h[6], '"dest_prefix"', 1, true) then
    local ok, parameters = pcall(cjson.decode, h[6])
    if ok and type(parameters) == 'table' and type(parameters.dest_prefix) == 'string' then
      dest = string.gsub(parameters.dest_prefix, '/+$', '') .. '/'
    end
  end
  local function put(shared, own, member)
    if op == 'ZADD' then redis.call('ZADD', shared, 0, member) else redis.call('ZREM', shared, member) end
    if client then
      if op == 'ZADD' then redis.call('ZADD', at(own, client), 0, member)
      else redis.call('ZREM', at(own, client), member) end
    end
  end
  put(K.jobs_by_id, K.client_jobs_by_id, id)
  if h[1] and h[2] then put(K.jobs_by_source, K.client_jobs_by_source, h[1] .. '/' .. h[2] .. '\0' .. id) end
  if h[3] and dest then put(K.jobs_by_dest, K.client_jobs_by_dest, h[3] .. '/' .. dest .. '\0' .. id) end
  if h[5] then put(K.jobs_by_request, K.client_jobs_by_request, h[5] .. '\0' .. id) end
end

-- Whether `a` sorts before `b` byte by byte, as Redis sorts the members of one score (Lua's own `<`
-- on strings follows the server's locale): list.lua's ids, claim.lua's client names.
local function sorts_before(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- A number argument that is missing, NaN or out of range refuses the call before anything is written
-- (Redis does not undo a script's writes when it fails half-way).
local function number_arg(value, name, min)
  local n = tonumber(value)
  if not n or n ~= n or n == math.huge or n == -math.huge or (min and n < min) then
    return nil, redis.error_reply('ERR invalid ' .. name .. ': ' .. tostring(value))
  end
  return n
end


-- A queue's order: higher priority first and, within one priority, submission order. A pending
-- queue is a sorted set scored -priority * PRIORITY_STEP + the job's place in the order of every
-- submission (queue_seq, a counter); scores stay below 2^53, so they are exact, for 2^44 submissions.
local PRIORITY_STEP = 17592186044416 -- 2^44

local function queue_score(priority, seq)
  return -(tonumber(priority) or 0) * PRIORITY_STEP + (tonumber(seq) or 0)
end

-- Fair share between clients (core/jobs/fair-share.ts). Beside its type's queue, a waiting job is in
-- its client's queue of that type (fair_queue, the same score), the type's clients with waiting jobs
-- are a set (fair_clients), and each client's jobs are counted (client_load): "<client>|pending"
-- while they wait in a queue, "<client>|running" while held (claimed, in the pool's queue or
-- processing; the job's field `held`). A job without a client counts as the client '-'.
local function fair_client(id)
  return redis.call('HGET', at(K.job, id), 'client') or '-'
end

local function fair_add(id, type, score)
  local client = fair_client(id)
  if redis.call('ZADD', at(K.fair_queue, type, client), score, id) == 1 then
    redis.call('SADD', at(K.fair_clients, type), client)
    redis.call('HINCRBY', K.client_load, client .. '|pending', 1)
  end
end

-- `client`: whose queue (when the caller knows it; a job pruned meanwhile has no client field).
local function fair_remove(id, type, client)
  client = client or fair_client(id)
  local queue = at(K.fair_queue, type, client)
  if redis.call('ZREM', queue, id) == 1 then
    redis.call('HINCRBY', K.client_load, client .. '|pending', -1)
    if redis.call('ZCARD', queue) == 0 then redis.call('SREM', at(K.fair_clients, type), client) end
  end
end

-- A claimed job counts among its client's running until it ends or goes back to its queue.
local function hold(id)
  if redis.call('HSETNX', at(K.job, id), 'held', '1') == 1 then
    redis.call('HINCRBY', K.client_load, fair_client(id) .. '|running', 1)
  end
end

local function release(id)
  if redis.call('HDEL', at(K.job, id), 'held') == 1 then
    redis.call('HINCRBY', K.client_load, fair_client(id) .. '|running', -1)
  end
end

-- The key of a type's pending queue. A queue an earlier version left as a list (first in, first out)
-- becomes a sorted set here, its jobs in their order at priority 0; and the jobs a version without
-- fair share queued are put in their clients' queues, once per type (fair_turn's `indexed`).
local function pending_queue(type)
  local key = at(K.pending, type)
  if redis.call('TYPE', key).ok == 'list' then
    local ids = redis.call('LRANGE', key, 0, -1)
    redis.call('DEL', key)
    for _, id in ipairs(ids) do
      local seq = redis.call('INCR', K.queue_seq)
      redis.call('HSET', at(K.job, id), 'queue_seq', seq)
      redis.call('ZADD', key, queue_score(0, seq), id)
    end
  end
  if redis.call('HSETNX', at(K.fair_turn, type), 'indexed', '1') == 1 then
    local entries = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    for i = 1, #entries, 2 do fair_add(entries[i], type, entries[i + 1]) end
  end
  return key
end

-- Puts a job in its queue at the place its priority and queue_seq give it: a job given back keeps
-- the place it was submitted to (ahead of the later submissions of its priority).
local function enqueue(id, type)
  local h = redis.call('HMGET', at(K.job, id), 'priority', 'queue_seq')
  local score = queue_score(h[1], h[2])
  if redis.call('ZADD', pending_queue(type), score, id) == 1 then note_depth(type, 1, id) end
  fair_add(id, type, score)
end

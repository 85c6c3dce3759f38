--[[
  lib_ending: the second part of lib.lua, put after it in front of each script (scripts.ts): how a
  job ends (failed, cancelled, its batch told) and how one goes back to its queue. lib.lua's header
  describes these functions with the others: the KEYS each needs and the events each records.
]]
-- Ends a pending or processing job as cancelled (job.cancelled); the caller has checked the status.
local cancel_job
-- Set by a script that cancels a whole batch itself (cancel.lua): its jobs' failures do not stop it.
local cancelling_batch = false
local function stop_batch(batch_id, failed_id)
  if cancelling_batch then return end
  local b = at(K.batch, batch_id)
  local h = redis.call('HMGET', b, 'fail_fast', 'stopped_by')
  if h[1] ~= '1' or (h[2] and h[2] ~= '') then return end
  redis.call('HSET', b, 'stopped_by', failed_id)
  local reason = 'cancelled: batch ' .. batch_id .. ' stopped by the failure of job ' .. failed_id
  for _, other in ipairs(redis.call('LRANGE', at(K.batch_jobs, batch_id), 0, -1)) do
    local st = redis.call('HGET', at(K.job, other), 'status')
    if st == 'pending' or st == 'processing' then cancel_job(other, st, reason) end
  end
end

-- What fail_job and cancel_job share: the job ends as failed, a cancellation or not. Answers the
-- fields of its event, which the caller records before ended_in_batch.
local function end_job(id, from, message, cancelled)
  local j = at(K.job, id)
  local h = redis.call('HMGET', j, 'type', 'batch_id', 'created_ms', 'started_ms', 'request_id', 'webhook_url')
  local type, batch_id, created_ms = h[1], h[2], tonumber(h[3])
  redis.call('HSET', j, 'status', 'failed', 'error', message, 'updated_at', NOW_ISO, 'completed_at', NOW_ISO)
  -- What an attempt did before a transient failure (partial.lua): the result of a failure that
  -- brings none of its own (a retry budget spent), so a keep_partial pipeline still reports the steps
  -- that completed. A cancellation reports nothing.
  local partial = redis.call('HGET', j, 'partial_result')
  if partial then
    if not cancelled and redis.call('HEXISTS', j, 'result') == 0 then redis.call('HSET', j, 'result', partial) end
    redis.call('HDEL', j, 'partial_result')
  end
  if h[4] then
    redis.call('HSET', j, 'duration_seconds', tostring((NOW - tonumber(h[4])) / 1000))
  end
  -- What a person reads (the job's `state`): cancelled or failed, each in an index of its own (the
  -- shared one, and the client's copy as move_index keeps them), and the queue's cancelled count
  -- (`cancelled`, of its `failed`; prune.lua takes it back).
  local state = cancelled and 'cancelled' or 'failed'
  if cancelled then
    redis.call('HSET', j, 'cancelled', '1', 'cancelled_at', NOW_ISO)
    redis.call('HINCRBY', at(K.stats, type), 'cancelled_total', 1)
    redis.call('HINCRBY', at(K.stats, type), 'cancelled', 1)
    -- The client's own counters too (lib.lua count).
    local client = owner_of(id)
    if client then
      redis.call('HINCRBY', at(K.client_stats, client, type), 'cancelled_total', 1)
      redis.call('HINCRBY', at(K.client_stats, client, type), 'cancelled', 1)
    end
  end
  redis.call('ZADD', at(K.jobs_by_state, state), created_ms, id)
  local owner = redis.call('HMGET', j, 'client', 'client_admin')
  if owner[1] and not owner[2] then
    redis.call('ZADD', at(K.client_jobs_by_state, owner[1], state), created_ms, id)
  end
  redis.call('HDEL', j, 'claimed_by', 'lease_until')
  if from == 'pending' then
    -- A queue left as a list by an earlier version is converted by whoever next takes from it.
    local queue = at(K.pending, type)
    local removed
    if redis.call('TYPE', queue).ok == 'list' then removed = redis.call('LREM', queue, 0, id)
    else removed = redis.call('ZREM', queue, id) end
    if removed > 0 then note_depth(type, -removed, id) end
    fair_remove(id, type)
  end
  redis.call('ZREM', at(K.active, type), id)
  release(id)
  count(type, from, 'failed', 'failed_total', id)
  move_status_index(id, from, 'failed', created_ms)
  redis.call('ZADD', K.expiry, NOW + RETENTION_MS, expiry_member('job', id))
  publish(id, 'complete', { status = 'failed', error = message })
  timeline(id, cancelled and 'cancelled' or 'failed', { message = message })
  note_ended(type, 'failed', nil, nil, id)
  if cancelled then note_ended(type, 'cancelled', nil, nil, id) end
  return {
    job_id = id, type = type, batch_id = batch_id, status = 'failed', was = from, request_id = h[5],
    webhook = h[6] and 1,
  }
end

-- The batch of a job that ended as failed, once its event is recorded: counted (a cancellation as
-- such too), stopped when it is fail_fast (stop_batch), and finished when it was its last job.
local function ended_in_batch(id, from, batch_id, cancelled)
  if batch_id and batch_id ~= '' then
    batch_move(batch_id, from, 'failed')
    -- Of the batch's failed, the cancelled ones (its record's `cancelled`).
    if cancelled and redis.call('EXISTS', at(K.batch, batch_id)) == 1 then
      redis.call('HINCRBY', at(K.batch, batch_id), 'cancelled', 1)
    end
    stop_batch(batch_id, id)
    finalize_batch(batch_id)
  end
end

-- Ends a pending or processing job as failed (job.failed); the caller has checked the status.
local function fail_job(id, from, message)
  local event = end_job(id, from, message, false)
  record('job.failed', event)
  ended_in_batch(id, from, event.batch_id, false)
end

cancel_job = function(id, from, message)
  local event = end_job(id, from, message, true)
  record('job.cancelled', event)
  ended_in_batch(id, from, event.batch_id, true)
end

-- Gives a claimed or processing job back to its place in its queue (enqueue), within its retry budget:
-- start.lua charges every run one attempt, and a processing job whose attempts have reached
-- `max_attempts` is failed instead (as fail.lua fails a job: batch, fail_fast and webhook alike)
-- with the error "<reason> (gave up after <attempts> attempts)". A job that is only claimed has not
-- been charged for this run and always goes back. A hand-back (`handback`: its executor stops, the
-- run did not fail) is never failed and refunds the attempt its run was charged, so the job keeps
-- its whole budget.
-- Returns 'requeued', 'failed', or 'unchanged' when there was nothing to give back (finished, or
-- pending and unclaimed); a NOTFOUND error reply when there is no such job.
-- The error of a job that failed transiently on each of its attempts: the retry rule's last word.
local function gave_up(reason, attempts)
  return reason .. ' (gave up after ' .. attempts .. (attempts == 1 and ' attempt)' or ' attempts)')
end

local function requeue_job(id, reason, max_attempts, handback)
  local j = at(K.job, id)
  local h = redis.call('HMGET', j, 'status', 'type', 'batch_id', 'created_ms', 'attempts')
  local status, type, batch_id = h[1], h[2], h[3]
  if not status then return redis.error_reply('NOTFOUND job ' .. id .. ' does not exist') end
  if status ~= 'pending' and status ~= 'processing' then return 'unchanged' end
  local active = at(K.active, type)
  if status == 'pending' and not redis.call('ZSCORE', active, id) then return 'unchanged' end
  local attempts = tonumber(h[5]) or 0
  if status == 'processing' and not handback and attempts >= max_attempts then
    fail_job(id, status, gave_up(reason, attempts))
    return 'failed'
  end
  redis.call('ZREM', active, id)
  release(id)
  redis.call('HDEL', j, 'claimed_by', 'lease_until', 'progress', 'eta_seconds', 'steps_progress', 'started_at',
    'started_ms')
  enqueue(id, type)
  redis.call('HSET', j, 'updated_at', NOW_ISO)
  if status == 'processing' then
    redis.call('HSET', j, 'status', 'pending')
    if handback and attempts > 0 then redis.call('HINCRBY', j, 'attempts', -1) end
    count(type, 'processing', 'pending', nil, id)
    move_status_index(id, 'processing', 'pending', tonumber(h[4]))
    if batch_id and batch_id ~= '' then batch_move(batch_id, 'processing', 'pending') end
  end
  publish(id, 'status', { status = 'pending', message = 'requeued: ' .. reason })
  timeline(id, 'requeued', { message = reason })
  record('job.requeued', { job_id = id, type = type, batch_id = batch_id, status = 'pending', reason = reason })
  return 'requeued'
end

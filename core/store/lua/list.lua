--[[
  list: one page of a job or batch list, newest first, and how many records match its filter. It
  writes nothing; the page, its records and the total are read in one step, so they agree.

  Input:
    KEYS  job jobs_by_created jobs_by_status jobs_by_type client_jobs_by_created client_jobs_by_status
          client_jobs_by_type batch_jobs batch batches_by_created batches_by_status
          client_batches_by_created client_batches_by_status jobs_by_state client_jobs_by_state
          jobs_by_id jobs_by_source jobs_by_dest jobs_by_request client_jobs_by_id
          client_jobs_by_source client_jobs_by_dest client_jobs_by_request

    ARGV[1], ARGV[2]  lib.lua's (not used here)
    ARGV[3] JSON {kind, client?, status?, state?, type?, batch_id?, search?, search_max?, after?,
      before?, cursor?, limit, fields?}:
      kind      "jobs" or "batches"
      client    read that client's own copies of the indexes (lib.lua move_index), not the shared ones
      status    only records of this status; type (jobs): only jobs of this type (jobs_by_type)
      state     (jobs) only jobs of this state (core/jobs/types.ts JOB_STATES): failed and cancelled
                read jobs_by_state, the others are statuses and read jobs_by_status
      batch_id  (jobs) only the jobs of this batch (batch_jobs)
      search    (jobs) {any?, id_prefix?, request_id?, source_prefix?, dest_prefix?}: only the jobs
                found in the search indexes (keys.ts jobs_by_id ...) of the reader: whose id starts
                with id_prefix, whose request_id is request_id, whose source or output
                ("bucket/key") starts with source_prefix or dest_prefix; all that are given. any:
                {id_prefix?, request_id?, source_prefix?, dest_prefix?} of which one is enough
                (the one search box of GET /jobs?q=)
      search_max  the most index entries one search may read (at least 1)
      after     only records created at or after this created_ms; before: only those created before it
      cursor    {s, id}: created_ms and id of the last record of the previous page; the page starts
                after it, whether or not that record is still there
      limit     the most records in the page (at least 1)
      fields    (jobs) the job hash fields answered for each job; a batch answers its whole hash
    after, before and cursor.s are decimal strings (epoch milliseconds).

  Output:
    { total, more, id, created_ms, record, id, created_ms, record, ... }: total, the number of records
    matching the filter (whatever the cursor and limit); more, 1 when records follow this page, else 0;
    then the page's records in order: created_ms descending, ties by id descending (bytewise), as
    ZREVRANGE orders members. A job's record is its HMGET of `fields`, a batch's its HGETALL.

    What a filter costs: one index (no filter, or only status, state or type; with after/before or
    not) is read by rank, O(log n + limit). Two or more of them walk the smallest of their indexes
    from the page's start, checking the others (ZMSCORE, 500 entries a call) until the page is
    full; the total is ZINTERCARD of them, or with after/before a count over every entry of the
    smallest index in the time window. batch_id reads the batch's jobs (at most 100) and checks
    each against the other filters. A search reads the index entries its terms match
    (ZRANGEBYLEX, O(log n + m)), at most search_max of them, and checks them as batch_id's jobs are
    checked (sorted by creation: O(m log m)); it refuses to read more.

  Emits: nothing

  Errors:
    ERR invalid <argument>: <value>
    TOOMANY the search matches more than <search_max> jobs, … (what to give instead)
]]
local q = cjson.decode(ARGV[3])
local function given(value)
  if value == nil or value == cjson.null then return nil end
  return value
end
local kind, client = q.kind, given(q.client)
local status, job_type, batch_id = given(q.status), given(q.type), given(q.batch_id)
local state = given(q.state)
local after, before, cursor = given(q.after), given(q.before), given(q.cursor)
if kind ~= 'jobs' and kind ~= 'batches' then return redis.error_reply('ERR invalid kind: ' .. tostring(kind)) end
local search = given(q.search)
if kind == 'batches' and (job_type or batch_id or state or search) then
  return redis.error_reply('ERR invalid filter: batches have no type, state, batch_id or search')
end
local limit, err = number_arg(q.limit, 'limit', 1)
if err then return err end
for name, value in pairs({ after = after, before = before, cursor = cursor and cursor.s or nil }) do
  local _, bad = number_arg(value, name)
  if bad then return bad end
end
if cursor and type(cursor.id) ~= 'string' then
  return redis.error_reply('ERR invalid cursor id: ' .. tostring(cursor.id))
end

-- The reader's copy of an index: the client's own, or the shared one.
local function index(shared, own, ...)
  if client then return at(own, client, ...) end
  return at(shared, ...)
end

-- The indexes a record must be in: the reader's whole list, or those of the filters.
local base, filters
if kind == 'jobs' then
  base = index(K.jobs_by_created, K.client_jobs_by_created)
  filters = {}
  if status then filters[#filters + 1] = index(K.jobs_by_status, K.client_jobs_by_status, status) end
  if job_type then filters[#filters + 1] = index(K.jobs_by_type, K.client_jobs_by_type, job_type) end
  if state == 'failed' or state == 'cancelled' then
    filters[#filters + 1] = index(K.jobs_by_state, K.client_jobs_by_state, state)
  elseif state then
    filters[#filters + 1] = index(K.jobs_by_status, K.client_jobs_by_status, state)
  end
else
  base = index(K.batches_by_created, K.client_batches_by_created)
  filters = {}
  if status then filters[#filters + 1] = index(K.batches_by_status, K.client_batches_by_status, status) end
end

local min_score = after or '-inf'
local max_score = before and ('(' .. before) or '+inf'
local after_n, before_n = tonumber(after), tonumber(before)
local function in_window(score)
  return (not after_n or score >= after_n) and (not before_n or score < before_n)
end
local cursor_s = cursor and tonumber(cursor.s)
-- Whether a record comes after the cursor in the list's order.
local function past_cursor(score, id)
  return not cursor or score < cursor_s or (score == cursor_s and sorts_before(id, cursor.id))
end

local total, rows, more = 0, {}, false

-- The ids a search finds, as a set, or an error reply (TOOMANY). Each term reads a range of the
-- reader's copy of one search index: members "<value>\0<id>" (or "<id>" in jobs_by_id) whose value
-- starts with a prefix, or equals a request id.
local function search_ids(terms)
  local budget, invalid = number_arg(q.search_max, 'search_max', 1)
  if invalid then return nil, invalid end
  local function range(shared, own, min, max, valued)
    local key = index(shared, own)
    local n = redis.call('ZLEXCOUNT', key, min, max)
    budget = budget - n
    if budget < 0 then
      return nil, redis.error_reply('TOOMANY the search matches more than ' .. q.search_max ..
        ' jobs, more than one search reads: give a longer prefix, or list with filters (status, type, batch_id, created_after) without one')
    end
    local found = {}
    if n == 0 then return found end
    for _, member in ipairs(redis.call('ZRANGEBYLEX', key, min, max)) do
      if valued then
        local nul = string.find(member, '\0', 1, true)
        if nul then found[string.sub(member, nul + 1)] = true end
      else
        found[member] = true
      end
    end
    return found
  end
  -- One term's ids (a table id -> true), or nil for a term not given.
  local function term(t, name)
    local value = given(t[name])
    if value == nil then return nil end
    value = tostring(value)
    if name == 'id_prefix' then return range(K.jobs_by_id, K.client_jobs_by_id, '[' .. value, '[' .. value .. '\255', false) end
    if name == 'request_id' then
      return range(K.jobs_by_request, K.client_jobs_by_request, '[' .. value .. '\0', '[' .. value .. '\0\255', true)
    end
    if name == 'source_prefix' then
      return range(K.jobs_by_source, K.client_jobs_by_source, '[' .. value, '[' .. value .. '\255', true)
    end
    return range(K.jobs_by_dest, K.client_jobs_by_dest, '[' .. value, '[' .. value .. '\255', true)
  end
  local NAMES = { 'id_prefix', 'request_id', 'source_prefix', 'dest_prefix' }
  local result
  for _, name in ipairs(NAMES) do
    local found, err = term(terms, name)
    if err then return nil, err end
    if found then
      if result then
        for id in pairs(result) do
          if not found[id] then result[id] = nil end
        end
      else
        result = found
      end
    end
  end
  local any = given(terms.any)
  if any then
    local union = {}
    for _, name in ipairs(NAMES) do
      local found, err = term(any, name)
      if err then return nil, err end
      for id in pairs(found or {}) do
        if not result or result[id] then union[id] = true end
      end
    end
    result = union
  end
  return result or {}
end

local candidates
if batch_id then candidates = redis.call('LRANGE', at(K.batch_jobs, batch_id), 0, -1) end
if search then
  local found, err = search_ids(search)
  if err then return err end
  local ids = {}
  if candidates then
    for _, id in ipairs(candidates) do
      if found[id] then ids[#ids + 1] = id end
    end
  else
    for id in pairs(found) do ids[#ids + 1] = id end
  end
  candidates = ids
end

if candidates then
  -- The batch's jobs, or those a search found: each one the reader may list (in its base index,
  -- which gives its created_ms) and that is in every filter's index and the window; 500 at a time
  -- (unpack's limit).
  local ids = candidates
  local matched = {}
  for from = 1, #ids, 500 do
    local chunk = { unpack(ids, from, math.min(from + 499, #ids)) }
    local scores = redis.call('ZMSCORE', base, unpack(chunk))
    local checks = {}
    for k, key in ipairs(filters) do checks[k] = redis.call('ZMSCORE', key, unpack(chunk)) end
    for i, id in ipairs(chunk) do
      local score = scores[i] and tonumber(scores[i]) or nil
      local ok = score ~= nil and in_window(score)
      for k = 1, #checks do ok = ok and checks[k][i] ~= false end
      if ok then matched[#matched + 1] = { id = id, s = scores[i], n = score } end
    end
  end
  table.sort(matched, function(a, b)
    if a.n ~= b.n then return a.n > b.n end
    return sorts_before(b.id, a.id)
  end)
  total = #matched
  for _, row in ipairs(matched) do
    if past_cursor(row.n, row.id) then
      if #rows == limit then
        more = true
        break
      end
      rows[#rows + 1] = row
    end
  end
else
  local candidates = #filters > 0 and filters or { base }
  -- The index with the fewest records in the window leads; a record must be in the others too.
  local driver, size
  for _, key in ipairs(candidates) do
    local n = redis.call('ZCOUNT', key, min_score, max_score)
    if not size or n < size then driver, size = key, n end
  end
  local checks = {}
  for _, key in ipairs(candidates) do
    if key ~= driver then checks[#checks + 1] = key end
  end
  -- Ranks in the driver, newest first: the window is [first, last].
  local first = before and redis.call('ZCOUNT', driver, before, '+inf') or 0
  local last = first + size - 1
  local start = first
  if cursor then
    -- The first rank past the cursor: past the newer scores, then (a binary search among the ids of
    -- its score, which ZREVRANGE gives in descending order) past the ids that do not sort before it.
    local lo = redis.call('ZCOUNT', driver, '(' .. cursor.s, '+inf')
    local hi = lo + redis.call('ZCOUNT', driver, cursor.s, cursor.s)
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local member = redis.call('ZREVRANGE', driver, mid, mid)[1]
      if sorts_before(member, cursor.id) then hi = mid else lo = mid + 1 end
    end
    if lo > start then start = lo end
  end

  if #checks == 0 then
    total = size
    if start <= last then
      local flat = redis.call('ZREVRANGE', driver, start, math.min(start + limit - 1, last), 'WITHSCORES')
      for i = 1, #flat, 2 do rows[#rows + 1] = { id = flat[i], s = flat[i + 1] } end
    end
    more = start + limit <= last
  else
    -- Walks the driver from rank `from` to `last`, 500 at a time, keeping the records in every
    -- index: counts them all when `count_all`, and collects those from rank `start` on, up to
    -- limit + 1 (the one more says whether the page is the last).
    local function walk(from, count_all)
      local matched, r = 0, from
      while r <= last do
        local upto = math.min(r + 499, last)
        local flat = redis.call('ZREVRANGE', driver, r, upto, 'WITHSCORES')
        local ids = {}
        for i = 1, #flat, 2 do ids[#ids + 1] = flat[i] end
        local checked = {}
        for k, key in ipairs(checks) do checked[k] = redis.call('ZMSCORE', key, unpack(ids)) end
        for i, id in ipairs(ids) do
          local ok = true
          for k = 1, #checked do ok = ok and checked[k][i] ~= false end
          if ok then
            matched = matched + 1
            if r + i - 1 >= start and #rows <= limit then rows[#rows + 1] = { id = id, s = flat[2 * i] } end
          end
        end
        if not count_all and #rows > limit then break end
        r = upto + 1
      end
      return matched
    end
    if after or before then
      total = walk(first, true)
    else
      total = redis.call('ZINTERCARD', #candidates, unpack(candidates))
      walk(start, false)
    end
    if #rows > limit then
      more = true
      rows[#rows] = nil
    end
  end
end

local out = { total, more and 1 or 0 }
for _, row in ipairs(rows) do
  local record
  if kind == 'jobs' then
    record = redis.call('HMGET', at(K.job, row.id), unpack(q.fields))
  else
    record = redis.call('HGETALL', at(K.batch, row.id))
  end
  out[#out + 1] = row.id
  out[#out + 1] = row.s
  out[#out + 1] = record
end
return out

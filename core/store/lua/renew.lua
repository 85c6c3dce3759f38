-- renew: extends the lease of a claimed or processing job.
-- ARGV[4]: job id, ARGV[5]: lease in ms. Returns 1 when renewed, 0 when the job holds no lease.
local id = ARGV[4]
local lease_ms, bad = number_arg(ARGV[5], 'lease', 1)
if bad then return bad end
local type = redis.call('HGET', key('job', id), 'type')
if not type or not redis.call('ZSCORE', key('queue', type, 'active'), id) then return 0 end
redis.call('ZADD', key('queue', type, 'active'), NOW + lease_ms, id)
redis.call('HSET', key('job', id), 'lease_until', NOW + lease_ms)
return 1

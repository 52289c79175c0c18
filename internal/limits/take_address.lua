-- Counts one request without a valid API key in its client network's
-- window, unless the window is at its limit: refused requests count in no
-- window. KEYS[1] the window, ARGV[1] its limit, ARGV[2] its length in ms.
-- Returns {1 if counted else 0, the window's count, ms to its reset}.
local n = tonumber(redis.call('GET', KEYS[1]) or 0)
if n >= tonumber(ARGV[1]) then
	return {0, n, redis.call('PTTL', KEYS[1])}
end
n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[2])
	ttl = tonumber(ARGV[2])
end
return {1, n, ttl}

-- Counts one request without a valid API key in its client address's window.
-- KEYS[1] the window, ARGV[1] its length in ms. Returns {count, ms to reset}.
local n = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
	redis.call('PEXPIRE', KEYS[1], ARGV[1])
	ttl = tonumber(ARGV[1])
end
return {n, ttl}

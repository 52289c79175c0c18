-- Counts one request of an API key, atomically: the address check, the key's
-- minute and day windows, and the rejection count that leads to a ban.
--
-- KEYS[1] the client address's window (requests without a valid key)
-- KEYS[2] the key's minute window, KEYS[3] its day window
-- KEYS[4] its rejections in a minute, KEYS[5] its ban
-- ARGV[1] the address's limit, ARGV[2] the minute in ms, ARGV[3] the per-minute quota,
-- ARGV[4] the day in ms, ARGV[5] the per-day quota, ARGV[6] rejections that ban,
-- ARGV[7] the ban in ms (0: no bans), ARGV[8] "1" when the key is already banned in the ledger,
-- ARGV[9] now in ms since the epoch, ARGV[10] when staff last lifted a ban of the key (0: never)
--
-- Returns {1, address count, its ms to reset} when the address is over its
-- limit (nothing counted), else {0, minute count, ms to reset, day count,
-- ms to reset, ms the ban has left (negative: none), 1 if this request banned the key}.

-- count adds one to a window, which starts with its first request.
local function count(key, ms)
	local n = redis.call('INCR', key)
	local ttl = redis.call('PTTL', key)
	if ttl < 0 then
		redis.call('PEXPIRE', key, ms)
		ttl = tonumber(ms)
	end
	return n, ttl
end

local address = tonumber(redis.call('GET', KEYS[1]) or 0)
if address > tonumber(ARGV[1]) then
	return {1, address, redis.call('PTTL', KEYS[1])}
end

-- The ban's copy here (its value: when it began) holds on every instance at
-- once, before the ledger shows it. Lifted in the ledger since it began, it
-- is forgotten with the minute window and rejections, once.
local ban = redis.call('PTTL', KEYS[5])
if ban >= 0 and tonumber(redis.call('GET', KEYS[5]) or 0) < tonumber(ARGV[10]) then
	redis.call('DEL', KEYS[2], KEYS[4], KEYS[5])
	ban = -2
end

local minute, minuteTTL = count(KEYS[2], ARGV[2])
local day, dayTTL = count(KEYS[3], ARGV[4])
local banned = 0
local banMS = tonumber(ARGV[7])
if ban < 0 and ARGV[8] ~= '1' and banMS > 0
	and (minute > tonumber(ARGV[3]) or day > tonumber(ARGV[5])) then
	local rejected = count(KEYS[4], ARGV[2])
	if rejected >= tonumber(ARGV[6]) then
		redis.call('SET', KEYS[5], ARGV[9], 'PX', banMS)
		ban, banned = banMS, 1
	end
end
return {0, minute, minuteTTL, day, dayTTL, ban, banned}

-- Decides one request of an API key, atomically: its ban, its minute and
-- day windows, and the rejections that lead to a ban. With ARGV[3] '0' it
-- decides nothing and only adds what this instance counted while Redis
-- failed.
--
-- Everything of one key on one UTC day is one hash, KEYS[1], read once and
-- written once:
--   c:ID  requests instance ID admitted in the day window
--   m:ID  requests instance ID admitted in the minute window
--   e     when the minute window ends (ms since the epoch)
--   f:ID, n:ID  the other instances' day and minute counts as instance ID
--         knew them, written when Redis holds less (it restarted empty, or
--         the instance restored its day from the ledger)
--   r, q  rejections counted towards a ban, and when their minute ends
--   b, u  when the key's ban began and when it ends
-- A window's count is the larger of the sum of its instances' counts and
-- each instance's count plus what it knew of the others. Each instance
-- writes its own counts as absolute numbers that only grow, never as
-- increments: a call that timed out, and that Redis runs later, writes
-- nothing that the instance's next call does not write too.
--
-- ARGV[1] this instance's id, ARGV[2] now (ms since the epoch),
-- ARGV[3] '1': decide a request; '0': only add this instance's counts,
-- ARGV[4] the minute in ms, ARGV[5] the per-minute quota,
-- ARGV[6] the end of the minute window this instance counts in (0: none),
-- ARGV[7] its count there, ARGV[8] the others' count there as it knows it,
-- ARGV[9] ms until the hash may be forgotten, ARGV[10] the per-day quota,
-- ARGV[11] this instance's day count, ARGV[12] the others' as it knows it,
-- ARGV[13] rejections that ban, ARGV[14] the ban in ms (0: no bans),
-- ARGV[15] '1' when the key is banned in the ledger,
-- ARGV[16] when staff last lifted a ban of the key (ms since the epoch, 0: never),
-- ARGV[17] '1' when ARGV[7] holds requests this instance admitted alone
-- while Redis failed, in a window that may not be the one Redis has
--
-- Returns {1 if admitted else 0, the minute count, this instance's part of
-- it, the minute window's end (0: no window), the day count, this
-- instance's part of it, ms the ban has left (0 or less: none), 1 if this
-- request banned the key}. Refused requests count in no window.

-- Globals, read once: each read of one goes through Redis's guard of them.
local tonumber, byte, sub, max, call, unpack = tonumber, string.byte, string.sub, math.max, redis.call, unpack

local id = ARGV[1]
local now = tonumber(ARGV[2])
local minuteMS = tonumber(ARGV[4])
local fields = call('HGETALL', KEYS[1])

-- A window: this instance's fields, the sum of the instances' counts, and
-- this instance's count as stored.
local minute = {field = 'm:' .. id, floorField = 'n:' .. id, countKind = 109, floorKind = 110, sum = 0, stored = 0}
local day = {field = 'c:' .. id, floorField = 'f:' .. id, countKind = 99, floorKind = 102, sum = 0, stored = 0}
local minuteEnd, rejected, rejectedEnd, banBegan, banEnds = 0, 0, 0, 0, 0
local minuteFields = {}
for i = 1, #fields, 2 do
	local name = fields[i]
	local kind = byte(name)
	if kind == 99 then -- c
		local n = tonumber(fields[i + 1])
		day.sum = day.sum + n
		if name == day.field then
			day.stored = n
		end
	elseif kind == 109 then -- m
		local n = tonumber(fields[i + 1])
		minute.sum = minute.sum + n
		if name == minute.field then
			minute.stored = n
		end
		minuteFields[#minuteFields + 1] = name
	elseif kind == 110 then -- n
		minute.floors = true
		minuteFields[#minuteFields + 1] = name
	elseif kind == 102 then -- f
		day.floors = true
	elseif name == 'e' then
		minuteEnd = tonumber(fields[i + 1])
	elseif name == 'r' then
		rejected = tonumber(fields[i + 1])
	elseif name == 'q' then
		rejectedEnd = tonumber(fields[i + 1])
	elseif name == 'b' then
		banBegan = tonumber(fields[i + 1])
	elseif name == 'u' then
		banEnds = tonumber(fields[i + 1])
	end
end

local writes = {}
local function set(field, value)
	local n = #writes
	writes[n + 1], writes[n + 2] = field, value
end

-- merge adds to window w what this instance knows, its own count and the
-- others', and sets the window's count.
local function merge(w, mine, others)
	if mine > w.stored then
		w.sum = w.sum + mine - w.stored
		w.stored = mine
		set(w.field, mine)
	end
	w.mine, w.total, w.known = w.stored, w.sum, 0
	if not w.floors and others <= w.sum - w.mine then
		return -- Redis has all this instance knows of
	end
	-- Pair each instance's floor with its count.
	local counts, known = {}, {}
	for i = 1, w.gone and 0 or #fields, 2 do
		local name = fields[i]
		local kind = byte(name)
		if kind == w.countKind then
			counts[sub(name, 3)] = tonumber(fields[i + 1])
		elseif kind == w.floorKind then
			known[sub(name, 3)] = tonumber(fields[i + 1])
		end
	end
	counts[id] = w.mine
	if others > w.sum - w.mine and others > (known[id] or 0) then
		known[id] = others
		set(w.floorField, others)
	end
	w.known = known[id] or 0
	for who, n in pairs(known) do
		w.total = max(w.total, (counts[who] or 0) + n)
	end
end

local decide = ARGV[3] == '1'
local ban, lifted = banEnds - now, false
if decide and ban > 0 and banBegan < tonumber(ARGV[16]) then
	-- Lifted in the ledger since it began: the ban is forgotten with the
	-- rejections, and the minute window starts again.
	ban, lifted, rejected = 0, true, 0
	set('u', 0)
	set('r', 0)
end
if rejectedEnd <= now then
	rejected = 0
end

local fresh = #fields == 0 -- the hash is new: it gets its expiry
local mine, others, known = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[6])
if minuteEnd <= now or lifted then
	-- No minute window now: it ended, the ban was lifted, or Redis lost it.
	if #minuteFields > 0 then
		call('HDEL', KEYS[1], unpack(minuteFields))
		minute.sum, minute.stored, minute.floors, minute.gone = 0, 0, false, true
		fresh = fresh or 2 * #minuteFields == #fields
	end
	if lifted then
		minuteEnd, mine, others = now + minuteMS, 0, 0
		set('e', minuteEnd)
	elseif known > now then
		-- A window this instance still counts in comes back.
		minuteEnd = known
		set('e', minuteEnd)
	else
		minuteEnd, mine, others = 0, 0, 0
	end
elseif known ~= minuteEnd then
	if ARGV[17] == '1' and known > now then
		-- This instance counted alone while Redis failed, in a window of
		-- its own: its requests go into the window Redis has, once (its
		-- count there only grows). What it knew of the others is of
		-- another window.
		others = 0
	else
		mine, others = 0, 0 -- this instance's counts are of another window
	end
end
merge(minute, mine, others)
merge(day, tonumber(ARGV[11]), tonumber(ARGV[12]))

local admitted, banning = 0, 0
if decide and ban <= 0 and ARGV[15] ~= '1' then
	if minute.total < tonumber(ARGV[5]) and day.total < tonumber(ARGV[10]) then
		admitted = 1
		if minuteEnd == 0 then
			minuteEnd = now + minuteMS
			set('e', minuteEnd)
		end
		-- Of a count's terms, only this instance's grow.
		for _, w in ipairs({minute, day}) do
			w.mine, w.sum = w.mine + 1, w.sum + 1
			w.total = max(w.total, w.sum, w.mine + w.known)
			set(w.field, w.mine)
		end
	elseif tonumber(ARGV[14]) > 0 then
		if rejected == 0 then
			set('q', now + minuteMS)
		end
		rejected = rejected + 1
		set('r', rejected)
		if rejected >= tonumber(ARGV[13]) then
			ban, banning = tonumber(ARGV[14]), 1
			set('b', now)
			set('u', now + ban)
		end
	end
end

if #writes > 0 then
	call('HSET', KEYS[1], unpack(writes))
	if fresh then
		call('PEXPIRE', KEYS[1], ARGV[9])
	end
end
return {admitted, minute.total, minute.mine, minuteEnd, day.total, day.mine, ban, banning}

-- What poll's scripts read from Redis, checked before anything reasons with it
-- (src/state/redis/mod.rs puts this before each script, after the bounds
-- MAX_AHEAD, MAX_WINDOW, MAX_KEPT_BODY and LAST that it writes from the Rust
-- rules): the rules of Origin::checked in src/state/origin.rs, so that one SET
-- on a shared key can never make a script fail (and the store count as
-- unreachable for the whole fleet). What poll did not write (not JSON, a field
-- of the wrong type, a number no Redis integer holds, a time negative or more
-- than MAX_AHEAD away, a key of the wrong type, a probe lease without an
-- expiry) is absent, and the part it was found in is named in the answer's
-- sixth element, for poll to say once.

local odd = {}

-- What was found odd, as the answer's sixth element: 'breaker,rate', or ''.
local function noted()
  local parts = {}
  for part in pairs(odd) do parts[#parts + 1] = part end
  table.sort(parts)
  return table.concat(parts, ',')
end

-- What the admit script says of the fleet (fleet.lua): whether a retry fits (-1: no
-- --retry-budget), the window's requests and retries, the learned rate ('' for none),
-- and the store's time when the turn was taken.
local fleet = {room = -1, requests = 0, retries = 0, rate = '', at = 0}

-- The answer of the admit and record scripts: kind, ms, why, prober, reason, what was odd, then the fleet's.
local function answer(kind, ms, why, prober, reason)
  return {kind, ms, why, prober, reason, noted(), fleet.room, fleet.requests, fleet.retries, fleet.rate, fleet.at}
end

-- A whole number from 0 to `most`, or nil: not NaN, not infinite, not
-- negative, and small enough for Lua's doubles and Redis's integers to agree.
local function whole(value, most)
  if type(value) ~= 'number' or value ~= value or value < 0 or value > most then return nil end
  return math.floor(value)
end

-- An epoch-ms time kept as `raw` in `part` (a string from GET, a number from
-- JSON), read at `now`: nil when there is none, and when it is not a time
-- from 0 to MAX_AHEAD past now (then said).
local function stored_time(raw, part, now)
  if raw == nil or raw == false then return nil end
  local at = whole(tonumber(raw), now + MAX_AHEAD)
  if not at then odd[part] = true end
  return at
end

-- Text poll shows (a breaker's reason): printable ASCII, at most 200 bytes.
local function shown(value)
  if type(value) == 'string' and #value <= 200 and not value:find('[^ -~]') then return value end
  return nil
end

-- A process's token, as poll makes them: PID:NONCE.
local function token_of(value)
  if type(value) == 'string' and #value <= 64 and value:find('^%d+:%x+$') then return value end
  return nil
end

-- A breaker's window: outcomes (each 2 * ms + 1 if it succeeded), oldest
-- first, the newest MAX_WINDOW kept; nil unless it is a list of them.
local function outcomes(value)
  if type(value) ~= 'table' then return nil end
  local count = 0
  for _ in pairs(value) do count = count + 1 end
  local list = {}
  for i = 1, count do
    -- A latency past year 9999 (in ms) is none poll measured, as Origin::checked says.
    local outcome = whole(value[i], 2 * LAST + 1)
    if not outcome then return nil end
    list[i] = outcome
  end
  if count > MAX_WINDOW then
    local newest = {}
    for i = count - MAX_WINDOW + 1, count do newest[#newest + 1] = list[i] end
    return newest, true
  end
  return list
end

-- The breaker kept as JSON in `raw`, read at `now`: a table of the fields
-- poll writes (state, until_ms, cooldown_ms, reason, prober, window), each
-- checked, or nil when there is none or it is no breaker poll wrote. An open
-- or half-open breaker whose time is absent (or more than MAX_AHEAD away) is
-- closed, as Origin::checked closes it; its window stays.
local function stored_breaker(raw, now)
  if raw == nil or raw == false then return nil end
  local decoded, value = pcall(cjson.decode, raw)
  local state = decoded and type(value) == 'table' and value.state
  if state ~= 'closed' and state ~= 'open' and state ~= 'half_open' then
    odd.breaker = true
    return nil
  end
  local breaker = {state = state}
  local function field(name, check)
    if value[name] == nil then return nil end
    local checked, cut = check(value[name])
    if checked == nil or cut then odd.breaker = true end
    return checked
  end
  breaker.until_ms = field('until_ms', function(v) return whole(v, now + MAX_AHEAD) end)
  breaker.cooldown_ms = field('cooldown_ms', function(v) return whole(v, LAST) end)
  breaker.reason = field('reason', shown)
  breaker.prober = field('prober', token_of)
  breaker.window = field('window', outcomes) or {}
  if state ~= 'closed' and not breaker.until_ms then
    odd.breaker = true
    breaker.state, breaker.prober = 'closed', nil
  end
  return breaker
end

-- The holder of the probe's lease kept in `key`: its token, or nil when
-- there is none. A key poll did not write there (another type, no token, no
-- expiry: a lease that would turn the fleet away forever) is deleted, and said.
local function lease_holder(key)
  local holder = redis.pcall('GET', key)
  if not holder then return nil end
  if token_of(holder) and redis.call('PTTL', key) > 0 then return holder end
  redis.call('DEL', key)
  odd.probe = true
  return nil
end

-- Makes `key` (`part`) a hash, or nothing: a key of another type there is deleted, and said.
local function own_hash(key, part)
  local kind = redis.call('TYPE', key)['ok']
  if kind ~= 'hash' and kind ~= 'none' then
    redis.call('DEL', key)
    odd[part] = true
  end
end

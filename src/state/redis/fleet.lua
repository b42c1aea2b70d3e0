-- The fleet's shared counts (src/state/redis/mod.rs puts this before the admit and
-- record scripts, after checked.lua): the rules of Traffic in src/rules/budget.rs
-- (--retry-budget: requests and retries per second of the store's clock) and of
-- Learned in src/rules/cubic.rs (--rate auto: the AWS SDKs' CUBIC rule), read and
-- checked as checked.lua reads the rest. Numbers are computed as the Rust rules
-- compute them (pow for powers, the same order of operations), so that both
-- stores give the same rate to the last bit: src/state/redis/twins.rs runs these
-- functions over the vectors of the Rust tables and compares every answer bit for bit.

-- A rate as an answer and a key hold it: every bit kept.
local function rate_text(rate)
  return string.format('%.17g', rate)
end

-- A rate within MIN_RATE and MAX_RATE; not a number is the slowest.
local function bounded(rate)
  if rate ~= rate then return MIN_RATE end
  return math.min(math.max(rate, MIN_RATE), MAX_RATE)
end

-- The spacing of `rate` requests a second, in whole ms (rounded up), at least 1:
-- the twin of cubic::spacing_ms (the rate is read here, within the step, so no
-- argument can carry its spacing in).
local function spacing_of(rate)
  return math.max(math.ceil(1000 / bounded(rate)), 1)
end

-- The counts kept as JSON in `raw`, read at `now`: a list of {second, requests,
-- retries}. A list of another shape is absent (said); a second more than a
-- day ahead or a count past MAX_COUNT is dropped (said), as Traffic::checked does.
local function stored_traffic(raw, now)
  if raw == nil or raw == false then return {} end
  local decoded, value = pcall(cjson.decode, raw)
  if not decoded or type(value) ~= 'table' or (#value == 0 and next(value) ~= nil) then
    odd.traffic = true
    return {}
  end
  local function count(n)
    return type(n) == 'number' and n == n and n >= 0 and n < 2 ^ 64 and n == math.floor(n)
  end
  local list, ahead = {}, math.floor(now / 1000) + 24 * 3600
  for i = 1, #value do
    local entry = value[i]
    if type(entry) ~= 'table' or #entry ~= 3 or not (count(entry[1]) and count(entry[2]) and count(entry[3])) then
      odd.traffic = true
      return {}
    end
    if entry[1] <= ahead and entry[2] <= MAX_COUNT and entry[3] <= MAX_COUNT then
      if #list < WINDOW_SECS + 2 then list[#list + 1] = {entry[1], entry[2], entry[3]} end
    else
      odd.traffic = true
    end
  end
  return list
end

-- Counts a request sent at `now` (a retry, or any other), forgetting seconds past the window.
local function counted(list, now, retry)
  local second = math.floor(now / 1000)
  local kept, found = {}, false
  for _, entry in ipairs(list) do
    if entry[1] + WINDOW_SECS >= second then kept[#kept + 1] = entry end
  end
  for _, entry in ipairs(kept) do
    if entry[1] == second then
      if retry then entry[3] = math.min(entry[3] + 1, MAX_COUNT) else entry[2] = math.min(entry[2] + 1, MAX_COUNT) end
      found = true
      break
    end
  end
  if not found then kept[#kept + 1] = {second, retry and 0 or 1, retry and 1 or 0} end
  return kept
end

-- The window's requests and retries at `now`, this second included.
local function window(list, now)
  local second, requests, retries = math.floor(now / 1000), 0, 0
  for _, entry in ipairs(list) do
    if entry[1] <= second and entry[1] + WINDOW_SECS > second then
      requests, retries = requests + entry[2], retries + entry[3]
    end
  end
  return requests, retries
end

-- Requests a second over the last 1000 ms: this second's, and the part of the last one still covered.
local function last_second(list, now)
  local second = math.floor(now / 1000)
  local function sent(at)
    for _, entry in ipairs(list) do
      if entry[1] == at then return entry[2] + entry[3] end
    end
    return 0
  end
  local past = 0
  if second >= 1 then past = sent(second - 1) end
  return sent(second) + past * (1 - (now % 1000) / 1000)
end

-- The rate learned at the last 429, kept as JSON in `raw`: {w = rate, cut = epoch ms},
-- or nil (said when it is no rate poll wrote).
local function stored_learned(raw, now)
  if raw == nil or raw == false then return nil end
  local decoded, value = pcall(cjson.decode, raw)
  local w = decoded and type(value) == 'table' and value.w_max
  local cut = decoded and type(value) == 'table' and whole(value.cut_at_ms, now + MAX_AHEAD)
  if type(w) ~= 'number' or w ~= w or w < MIN_RATE or w > MAX_RATE or not cut then
    odd.learned = true
    return nil
  end
  return {w = w, cut = cut}
end

-- K: the seconds the curve takes from a cut back to `w`, the rate cut.
local function zero_point(w)
  return (w * (1 - BETA) / SCALE) ^ (1 / 3)
end

-- The learned rate in force at `now`: C (t - K)^3 + W.
local function learned_rate(learned, now)
  local since = math.max(now - learned.cut, 0) / 1000
  return bounded(SCALE * (since - zero_point(learned.w)) ^ 3 + learned.w)
end

-- What a 429 at `now` leaves, while the fleet sent `measured` requests a second
-- and `learned` (or nil) was in force: the lower of the two, within bounds.
local function cut(learned, measured, now)
  local sending = measured
  if learned then sending = math.min(sending, learned_rate(learned, now)) end
  return {w = bounded(sending), cut = now}
end

-- Whether one more retry fits in a window that counted `requests` and `retries`,
-- under --retry-budget `pct`%/`per_second`.
local function has_room(pct, per_second, requests, retries)
  return 100 * (retries + 1) <= pct * requests + 100 * per_second * WINDOW_SECS
end

-- poll's record step (src/state/redis/mod.rs): what one attempt leaves behind, as
-- one atomic script on the Redis server. The rules of Origin::record in
-- src/state/origin.rs and Breaker::record in src/rules/breaker.rs, on the server's
-- clock: keep the server's advice and a good body, and feed the breaker.
--
-- KEYS[1] advice   the server's "not before" (epoch ms)
-- KEYS[2] breaker  JSON, as admit.lua describes it
-- KEYS[3] probe    the half-open lease
-- KEYS[4] last     a hash: URL -> the last good body
-- KEYS[5] last_at  a hash: URL -> when it was kept (epoch ms)
-- KEYS[6] traffic  JSON, as admit.lua describes it
-- KEYS[7] learned  JSON, as admit.lua describes it
--
-- ARGV[1]  now in epoch ms, or "" for the server's TIME (tests pin the clock)
-- ARGV[2]  ms of server-advised wait the run honoured, -1 for none
-- ARGV[3]  1 when the breaker is kept
-- ARGV[4]  this process's token, "PID:NONCE"
-- ARGV[5]  1 when the attempt counts as a success for the breaker
-- ARGV[6]  its latency in ms
-- ARGV[7]  --breaker-window
-- ARGV[8]  --breaker-min-success (percent)
-- ARGV[9]  --breaker-max-p95 in ms
-- ARGV[10] --breaker-cooldown in ms
-- ARGV[11] the cap of a doubled cool-down in ms
-- ARGV[12] how long a breaker is kept after its last write, in ms
-- ARGV[13] the fewest outcomes the breaker judges
-- ARGV[14] 'keep' (ARGV[16] is the good body of URL ARGV[15]), 'drop' (too large to keep: forget URL's), or ''
-- ARGV[15] the URL (redacted)
-- ARGV[16] the body
-- ARGV[17] bodies kept per key, at most
-- ARGV[18] how long a body is kept after it was written, in ms
-- ARGV[19] --rate auto: the store's time when the turn of an attempt answered 429 was taken, -1 for none
--
-- Returns {'ok', 0, 0, '', '', odd}, or {'open', retry_in, 0, prober, reason, odd}
-- when the breaker turns callers away afterwards (odd: the parts found odd,
-- checked.lua). A reason is kept as numbers
-- ('rate:FAILED:N:PCT', 'p95:N:P95:MAX', 'probe') that poll puts in words.

if redis.replicate_commands then redis.replicate_commands() end

local now = clock(ARGV[1])

-- The server's advice: the later "not before" stands, and expires when it passes.
local advised = tonumber(ARGV[2])
if advised > 0 and now + advised > (stored_time(redis.pcall('GET', KEYS[1]), 'advice', now) or 0) then
  redis.call('SET', KEYS[1], now + advised, 'PX', advised)
end

-- The last good body of a URL, each kept for ARGV[18] after it was written;
-- beyond ARGV[17] bodies the oldest goes first.
local good, url = ARGV[14], ARGV[15]
if good ~= '' then
  own_hash(KEYS[4], 'last')
  own_hash(KEYS[5], 'last_at')
end
if good == 'keep' then
  local ttl, most = tonumber(ARGV[18]), tonumber(ARGV[17])
  redis.call('HSET', KEYS[4], url, ARGV[16])
  redis.call('HSET', KEYS[5], url, now)
  local times, fresh = redis.call('HGETALL', KEYS[5]), {}
  for i = 1, #times, 2 do
    -- A time that is no number poll wrote is as old as can be: it goes.
    local at = whole(tonumber(times[i + 1]), now + MAX_AHEAD) or 0
    if now - at >= ttl then
      redis.call('HDEL', KEYS[4], times[i])
      redis.call('HDEL', KEYS[5], times[i])
    else
      fresh[#fresh + 1] = {times[i], at}
    end
  end
  table.sort(fresh, function(a, b)
    if a[2] ~= b[2] then return a[2] < b[2] end
    return a[1] < b[1]
  end)
  for i = 1, #fresh - most do
    redis.call('HDEL', KEYS[4], fresh[i][1])
    redis.call('HDEL', KEYS[5], fresh[i][1])
  end
  redis.call('PEXPIRE', KEYS[4], ttl)
  redis.call('PEXPIRE', KEYS[5], ttl)
elseif good == 'drop' then
  redis.call('HDEL', KEYS[4], url)
  redis.call('HDEL', KEYS[5], url)
end

-- A 429 cuts the learned rate to BETA of what the fleet was sending over its last second
-- (the lower of that and the rate in force), unless its turn was taken before the last cut.
local throttled_at = tonumber(ARGV[19])
if throttled_at >= 0 then
  local learned = stored_learned(redis.pcall('GET', KEYS[7]), now)
  if not learned or learned.cut <= throttled_at then
    local measured = last_second(stored_traffic(redis.pcall('GET', KEYS[6]), now), now)
    local kept = string.format('{"w_max":%s,"cut_at_ms":%d}', rate_text(cut(learned, measured, now).w), now)
    redis.call('SET', KEYS[7], kept, 'PX', LEARNED_KEPT + 1)
  end
end

if ARGV[3] ~= '1' then return answer('ok', 0, 0, '', '') end

local token, ok, latency = ARGV[4], ARGV[5] == '1', tonumber(ARGV[6])
local window, min_success, max_p95 = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local flag_cooldown, cap, kept, fewest = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])

-- Checked (checked.lua): what poll did not write is absent, a fresh closed breaker.
local breaker = stored_breaker(redis.pcall('GET', KEYS[2]), now) or {state = 'closed', window = {}}
local state = breaker.state
local open_until, reason = breaker.until_ms or 0, breaker.reason or ''

-- Why the window says the origin is down, if it does.
local function verdict(outcomes)
  local n = #outcomes
  if n < fewest then return nil end
  local good, slow = 0, 0
  for i = 1, n do
    local outcome = outcomes[i]
    if outcome % 2 == 1 then good = good + 1 end
    if math.floor(outcome / 2) > max_p95 then slow = slow + 1 end
  end
  if good * 100 < min_success * n then
    return 'rate:' .. (n - good) .. ':' .. n .. ':' .. min_success
  end
  -- The nearest-rank p95 is above the limit exactly when more than n - rank latencies are.
  local rank = math.max(math.floor((n * 95 + 99) / 100), 1)
  if slow > n - rank then
    local latencies = {}
    for i = 1, n do latencies[i] = math.floor(outcomes[i] / 2) end
    table.sort(latencies)
    return 'p95:' .. n .. ':' .. latencies[rank] .. ':' .. max_p95
  end
  return nil
end

if state == 'closed' then
  local outcomes = breaker.window or {}
  outcomes[#outcomes + 1] = 2 * latency + (ok and 1 or 0)
  local extra = #outcomes - math.max(window, 1)
  if extra > 0 then
    local newer = {}
    for i = extra + 1, #outcomes do newer[#newer + 1] = outcomes[i] end
    outcomes = newer
  end
  breaker.window = outcomes
  local why = verdict(outcomes)
  if why then
    state, open_until, reason = 'open', now + flag_cooldown, why
    breaker.state, breaker.until_ms, breaker.cooldown_ms, breaker.reason = state, open_until, flag_cooldown, reason
  end
  redis.call('SET', KEYS[2], cjson.encode(breaker), 'PX', math.max(open_until - now, 0) + kept)
elseif state == 'half_open' and breaker.prober == token then
  -- This process's probe: the origin is back (start afresh), or open again for twice as long.
  redis.call('DEL', KEYS[3])
  if ok then
    redis.call('DEL', KEYS[2])
    state = 'closed'
  else
    local cooldown = breaker.cooldown_ms or 0
    if cooldown <= 0 then cooldown = flag_cooldown end
    cooldown = math.min(cooldown * 2, cap)
    state, open_until, reason = 'open', now + cooldown, 'probe'
    breaker.state, breaker.until_ms, breaker.cooldown_ms, breaker.reason = state, open_until, cooldown, reason
    breaker.prober = nil
    redis.call('SET', KEYS[2], cjson.encode(breaker), 'PX', cooldown + kept)
  end
end
-- Otherwise: an attempt admitted before the breaker opened, or another
-- process's probe; its outcome does not change the verdict.

return refusal(state, open_until, reason, now, KEYS[3]) or answer('ok', 0, 0, '', '')

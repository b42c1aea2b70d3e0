-- poll's record step (src/state/redis.rs): what one attempt leaves behind, as
-- one atomic script on the Redis server. The rules of Origin::record in
-- src/state/origin.rs and Breaker::record in src/breaker.rs, on the server's
-- clock: keep the server's advice and a good body, and feed the breaker.
--
-- KEYS[1] advice   the server's "not before" (epoch ms)
-- KEYS[2] breaker  a hash: state (closed|open|half_open), until (the cool-down's or the lease's end),
--                  cooldown, reason, prober (the token of the last probe), window
-- KEYS[3] probe    the half-open lease
-- KEYS[4] last     a hash: URL -> the last good body
-- KEYS[5] last_at  a hash: URL -> when it was kept (epoch ms)
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
--
-- Returns {'ok', 0, 0, '', ''}, or {'open', retry_in, 0, prober, reason} when
-- the breaker turns callers away afterwards. A reason is kept as numbers
-- ('rate:FAILED:N:PCT', 'p95:N:P95:MAX', 'probe') that poll puts in words.

if redis.replicate_commands then redis.replicate_commands() end

local now = tonumber(ARGV[1])
if not now then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- The server's advice: the later "not before" stands, and expires when it passes.
local advised = tonumber(ARGV[2])
if advised > 0 and now + advised > (tonumber(redis.call('GET', KEYS[1])) or 0) then
  redis.call('SET', KEYS[1], now + advised, 'PX', advised)
end

-- The last good body of a URL, each kept for ARGV[18] after it was written;
-- beyond ARGV[17] bodies the oldest goes first.
local good, url = ARGV[14], ARGV[15]
if good == 'keep' then
  local ttl, most = tonumber(ARGV[18]), tonumber(ARGV[17])
  redis.call('HSET', KEYS[4], url, ARGV[16])
  redis.call('HSET', KEYS[5], url, now)
  local times, fresh = redis.call('HGETALL', KEYS[5]), {}
  for i = 1, #times, 2 do
    local at = tonumber(times[i + 1]) or 0
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

if ARGV[3] ~= '1' then return {'ok', 0, 0, '', ''} end

local token, ok, latency = ARGV[4], ARGV[5] == '1', tonumber(ARGV[6])
local window, min_success, max_p95 = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local flag_cooldown, cap, kept, fewest = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])

local breaker = redis.call('HMGET', KEYS[2], 'state', 'until', 'cooldown', 'reason', 'prober', 'window')
local state = breaker[1] or 'closed'
local open_until, cooldown, reason = tonumber(breaker[2]) or 0, tonumber(breaker[3]) or 0, breaker[4] or ''

-- Why the window says the origin is down, if it does (nearest-rank p95).
local function verdict(samples)
  local n = #samples
  if n < fewest then return nil end
  local good_ones, latencies = 0, {}
  for i, sample in ipairs(samples) do
    if sample[1] then good_ones = good_ones + 1 end
    latencies[i] = sample[2]
  end
  if good_ones * 100 < min_success * n then
    return 'rate:' .. (n - good_ones) .. ':' .. n .. ':' .. min_success
  end
  table.sort(latencies)
  local p95 = latencies[math.max(math.floor((n * 95 + 99) / 100), 1)]
  if p95 > max_p95 then return 'p95:' .. n .. ':' .. p95 .. ':' .. max_p95 end
  return nil
end

if state == 'closed' then
  -- The window, oldest first, as "OK:MS OK:MS ...".
  local samples = {}
  for sample_ok, ms in string.gmatch(breaker[6] or '', '(%d):(%d+)') do
    samples[#samples + 1] = {sample_ok == '1', tonumber(ms)}
  end
  samples[#samples + 1] = {ok, latency}
  while #samples > math.max(window, 1) do table.remove(samples, 1) end
  local words = {}
  for i, sample in ipairs(samples) do words[i] = (sample[1] and '1:' or '0:') .. sample[2] end
  local why = verdict(samples)
  if why then
    state, cooldown, reason = 'open', flag_cooldown, why
    open_until = now + cooldown
    redis.call('HSET', KEYS[2], 'state', state, 'until', open_until, 'cooldown', cooldown, 'reason', reason,
      'window', table.concat(words, ' '))
  else
    redis.call('HSET', KEYS[2], 'window', table.concat(words, ' '))
  end
  redis.call('PEXPIRE', KEYS[2], math.max(open_until - now, 0) + kept)
elseif state == 'half_open' and breaker[5] == token then
  -- This process's probe: the origin is back (start afresh), or open again for twice as long.
  redis.call('DEL', KEYS[3])
  if ok then
    redis.call('DEL', KEYS[2])
    state = 'closed'
  else
    if cooldown <= 0 then cooldown = flag_cooldown end
    state, cooldown, reason = 'open', math.min(cooldown * 2, cap), 'probe'
    open_until = now + cooldown
    redis.call('HSET', KEYS[2], 'state', state, 'until', open_until, 'cooldown', cooldown, 'reason', reason)
    redis.call('HDEL', KEYS[2], 'prober')
    redis.call('PEXPIRE', KEYS[2], cooldown + kept)
  end
end
-- Otherwise: an attempt admitted before the breaker opened, or another
-- process's probe; its outcome does not change the verdict.

if state == 'open' and now < open_until then
  return {'open', open_until - now, 0, '', reason}
end
if state == 'half_open' then
  local holder = redis.call('GET', KEYS[3])
  if holder and now < open_until then
    return {'open', open_until - now, 0, holder, reason}
  end
end
return {'ok', 0, 0, '', ''}

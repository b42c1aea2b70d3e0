-- poll's admit step (src/state/redis/mod.rs): the turn before one attempt, as one
-- atomic script on the Redis server. The rules of Origin::admit in
-- src/state/origin.rs, on the server's clock: the breaker first, then the
-- server's "not before", then the --rate slot (GCRA with a burst of one, as
-- go-redis/redis_rate keeps it: one theoretical arrival time per key).
--
-- KEYS[1] rate     the next free --rate slot (epoch ms)
-- KEYS[2] advice   the server's "not before" (epoch ms)
-- KEYS[3] breaker  JSON: state (closed|open|half_open), until_ms (the cool-down's end, or
--                  the lease's while half-open), cooldown_ms, reason, prober (the last
--                  probe's token), window (outcomes, oldest first, each 2 * ms + 1 if it succeeded)
-- KEYS[4] probe    the half-open lease: the prober's token, expiring with the lease
-- KEYS[5] traffic  JSON: the fleet's [second, requests, retries] (--retry-budget, --rate auto)
-- KEYS[6] learned  JSON: the rate learned at the last 429, {w_max, cut_at_ms} (--rate auto)
-- KEYS[7] queue    the next ticket of a learned rate (epoch ms)
--
-- ARGV[1] now in epoch ms, or "" for the server's TIME (tests pin the clock)
-- ARGV[2] --rate spacing in ms, 0 without --rate
-- ARGV[3] ms left before --timeout, -1 without a deadline
-- ARGV[4] 1 when the breaker is kept
-- ARGV[5] this process's token, "PID:NONCE"
-- ARGV[6] --breaker-cooldown in ms
-- ARGV[7] how long a breaker is kept after its last write, in ms
-- ARGV[8] the shortest lease in ms: the probe's own budget plus a second
-- ARGV[9]  1 when the attempt is a retry (--retry-budget counts it as one)
-- ARGV[10] --retry-budget's percent, -1 without a budget
-- ARGV[11] --retry-budget's retries a second
-- ARGV[12] 1 under --rate auto
--
-- Returns {kind, ms, why, prober, reason, odd, room, requests, retries, rate, at}
-- (odd: the parts found odd, checked.lua; the rest, the fleet's: see checked.lua):
--   {'go', wait, why, '', ''}         send after wait ms; why: 0 nothing, 1 the --rate slot, 2 the "not before"
--   {'late', wait, why, '', ''}       the turn would come at or after the deadline; nothing was taken
--   {'defer', wait, 0, '', ''}        a learned rate's turn is past HORIZON: ask again after wait ms
--   {'open', retry_in, 0, prober, reason}  the breaker turns this caller away (prober: the lease holder's token)

if redis.replicate_commands then redis.replicate_commands() end

local now = clock(ARGV[1])
local spacing = tonumber(ARGV[2])
local deadline_in = tonumber(ARGV[3])
local token = ARGV[5]
local kept = tonumber(ARGV[7])

-- One read for all, each checked (checked.lua, fleet.lua) before anything reasons with it.
local stored = redis.call('MGET', KEYS[1], KEYS[2], KEYS[3], KEYS[5], KEYS[6], KEYS[7])
local slot, not_before = stored_time(stored[1], 'rate', now), stored_time(stored[2], 'advice', now)
local budget_pct, budget_per_second, auto = tonumber(ARGV[10]), tonumber(ARGV[11]), ARGV[12] == '1'
local traffic = stored_traffic(stored[4], now)
local learned = stored_learned(stored[5], now)
local queue = stored_time(stored[6], 'queue', now) or 0

local breaker, probe, cooldown, lease, reason = nil, false, 0, 0, ''
if ARGV[4] == '1' then breaker = stored_breaker(stored[3], now) end
if breaker then
  local state, open_until = breaker.state, breaker.until_ms or 0
  reason = breaker.reason or ''
  local refused, stale = refusal(state, open_until, reason, now, KEYS[4])
  if refused then return refused end
  -- A lease the clock says is over goes, even in the millisecond before its key expires.
  if stale then redis.call('DEL', KEYS[4]) end
  if state == 'open' or state == 'half_open' then
    -- The cool-down is over, or the last prober's lease ran out: this caller probes.
    probe = true
    cooldown = breaker.cooldown_ms or 0
    if cooldown <= 0 then cooldown = tonumber(ARGV[6]) end
    lease = math.max(cooldown, tonumber(ARGV[8]) or 0)
  end
end

if learned and now - learned.cut > LEARNED_KEPT then learned = nil end
local rate = nil
if learned and auto then
  rate = learned_rate(learned, now)
  spacing = spacing_of(rate)
end
local advised = math.max(not_before or 0, now)
local at = advised
if spacing > 0 then
  at = math.max(slot or 0, advised)
end
local why = 0
if at > advised then why = 1 elseif at > now then why = 2 end
-- A learned rate hands out turns no further than HORIZON ahead, so that a cut
-- can slow all but those: past it, a ticket to ask again near the turn.
if rate and at > now + HORIZON then
  local ticket = math.max(queue, at)
  local wait = ticket - HORIZON - now
  if deadline_in >= 0 and wait >= deadline_in then return answer('late', wait, 1, '', '') end
  redis.call('SET', KEYS[7], ticket + spacing, 'PX', ticket + spacing - now + HORIZON)
  fleet.rate = rate_text(rate)
  return answer('defer', wait, 0, '', '')
end
local wait = at - now
if why ~= 0 and deadline_in >= 0 and wait >= deadline_in then
  return answer('late', wait, why, '', '')
end

if probe then
  -- The lease: one cool-down from the probe's slot, or the probe's own budget
  -- plus a second when longer, so no second probe starts while this one is in
  -- flight. Whoever holds it probes; it expires by itself, so a prober killed
  -- with kill -9 holds the origin no longer. A key there that poll did not
  -- write is gone first (lease_holder).
  local holder = lease_holder(KEYS[4])
  if holder or not redis.call('SET', KEYS[4], token, 'NX', 'PX', wait + lease) then
    return answer('open', math.max(redis.call('PTTL', KEYS[4]), 0), 0, holder or '', reason)
  end
  breaker.state, breaker.prober, breaker.until_ms = 'half_open', token, at + lease
  redis.call('SET', KEYS[3], cjson.encode(breaker), 'PX', wait + lease + kept)
end
if spacing > 0 then
  -- Past its slot plus one spacing, a missing key means the same as this one: "now".
  redis.call('SET', KEYS[1], at + spacing, 'PX', wait + 2 * spacing)
end
if budget_pct >= 0 or auto then
  traffic = counted(traffic, now, ARGV[9] == '1')
  redis.call('SET', KEYS[5], cjson.encode(traffic), 'PX', (WINDOW_SECS + 2) * 1000)
end
if budget_pct >= 0 then
  local requests, retries = window(traffic, now)
  local room = has_room(budget_pct, budget_per_second, requests, retries)
  fleet.room, fleet.requests, fleet.retries = room and 1 or 0, requests, retries
end
if rate then fleet.rate = rate_text(rate) end
fleet.at = now
return answer('go', wait, why, '', '')

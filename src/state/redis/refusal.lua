-- The breaker's answer to a caller (src/state/redis/mod.rs puts this before the
-- admit and record scripts): the refusal an open breaker, or a half-open one
-- whose probe's lease `probe_key` still runs, gives at `now`, or nil; and
-- when the lease's time is over but its key is still there, its holder.
local function refusal(state, open_until, reason, now, probe_key)
  if state == 'open' and now < open_until then
    return answer('open', open_until - now, 0, '', reason)
  end
  if state == 'half_open' then
    local holder = lease_holder(probe_key)
    if holder and now < open_until then
      return answer('open', open_until - now, 0, holder, reason)
    end
    return nil, holder
  end
  return nil
end

-- poll's read of a last good body (src/state/redis.rs), for --fallback last:
-- the body of URL ARGV[1], or nil when none was kept or it is older than
-- ARGV[2] ms by the server's clock.
--
-- KEYS[1] last     a hash: URL -> the last good body
-- KEYS[2] last_at  a hash: URL -> when it was kept (epoch ms)
-- ARGV[3] now in epoch ms, or "" for the server's TIME (tests pin the clock)

local now = clock(ARGV[3])
local at = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if not at or now - at >= tonumber(ARGV[2]) then return nil end
return redis.call('HGET', KEYS[1], ARGV[1])

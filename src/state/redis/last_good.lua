-- poll's read of a last good body (src/state/redis/mod.rs), for --fallback last:
-- the body of URL ARGV[1], or nil when none was kept or it is older than
-- ARGV[2] ms by the server's clock.
--
-- KEYS[1] last     a hash: URL -> the last good body
-- KEYS[2] last_at  a hash: URL -> when it was kept (epoch ms)
-- ARGV[3] now in epoch ms, or "" for the server's TIME (tests pin the clock)

local now = clock(ARGV[3])
-- Checked (checked.lua): a hash of another type, a time that is no number
-- poll wrote, or a body larger than poll keeps is no body.
local at = redis.pcall('HGET', KEYS[2], ARGV[1])
at = type(at) == 'string' and whole(tonumber(at), now + MAX_AHEAD)
if not at or now - at >= tonumber(ARGV[2]) then return nil end
local body = redis.pcall('HGET', KEYS[1], ARGV[1])
if type(body) ~= 'string' or #body > MAX_KEPT_BODY then return nil end
return body

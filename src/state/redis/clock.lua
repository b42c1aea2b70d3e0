-- The clock of poll's scripts (src/state/redis/mod.rs puts this before each):
-- the Redis server's TIME in epoch ms, so that every machine of a fleet
-- shares one clock, unless a test pins it with a number in `pinned`.
local function clock(pinned)
  local now = tonumber(pinned)
  if now then return now end
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end


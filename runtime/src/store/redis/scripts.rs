//! The store's Lua scripts: each runs atomically in Redis.

/// Compare-and-set, and every check a write passes first: the marker, the clock, the lease,
/// the version; the record's place among the deadlines written with it.
pub(super) const COMPARE_AND_SET: &str = r#"
if redis.call('GET', KEYS[5]) ~= ARGV[9] then
  return {3, 0, 0}
end
-- Redis's clock, lower than a value the store saw: Redis went back, and nothing is written.
local clock = tonumber(redis.call('GET', KEYS[7]) or '0')
if clock < tonumber(ARGV[11]) then
  return {4, 0, clock}
end
local current = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if ARGV[4] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[4] then
  return {2, current, clock}
end
if current ~= tonumber(ARGV[1]) then
  return {0, current, clock}
end
-- When it is next due, indexed in the same step, so no index write of an older commit
-- lands over a newer one's; and first of the writes: a script that fails part-way keeps
-- what it wrote, and one this user may not index must write nothing.
if ARGV[12] ~= '' then
  redis.call('ZADD', KEYS[8], ARGV[12], ARGV[5])
else
  redis.call('ZREM', KEYS[8], ARGV[5])
end
local version = redis.call('INCR', KEYS[2])
clock = redis.call('INCR', KEYS[7])
-- The instances counted by state: the record's names move from its old counters to its new.
local counted, names = redis.call('HGET', KEYS[1], 'ck'), redis.call('HGET', KEYS[1], 'cn')
if ARGV[10] ~= '' and (counted ~= KEYS[6] or names ~= ARGV[10]) or ARGV[10] == '' and counted then
  if counted then
    for name in string.gmatch(names, '[^\n]+') do redis.call('HINCRBY', counted, name, -1) end
  end
  for name in string.gmatch(ARGV[10], '[^\n]+') do redis.call('HINCRBY', KEYS[6], name, 1) end
end
redis.call('HSET', KEYS[1], 'v', version, 's', ARGV[2])
if ARGV[10] ~= '' then
  redis.call('HSET', KEYS[1], 'ck', KEYS[6], 'cn', ARGV[10])
elseif counted then
  redis.call('HDEL', KEYS[1], 'ck', 'cn')
end
redis.call('PUBLISH', 'toolgate:commits', ARGV[5])
if current == 0 then
  -- What an expired or removed record left behind went with it.
  redis.call('DEL', KEYS[4])
end
if ARGV[6] ~= '' then
  redis.call('RPUSH', KEYS[4], ARGV[6])
  if ARGV[7] == '0' then
    redis.call('DEL', KEYS[4])
  elseif ARGV[7] ~= '' then
    redis.call('LTRIM', KEYS[4], -tonumber(ARGV[7]), -1)
  end
  if ARGV[8] ~= '' then
    local oldest = tonumber(ARGV[8])
    while true do
      local first = redis.call('LINDEX', KEYS[4], 0)
      if not first or cjson.decode(first).at_ms >= oldest then break end
      redis.call('LPOP', KEYS[4])
    end
  end
end
if ARGV[3] ~= '' then
  redis.call('PEXPIREAT', KEYS[1], ARGV[3])
  redis.call('PEXPIREAT', KEYS[4], ARGV[3])
else
  redis.call('PERSIST', KEYS[1])
  redis.call('PERSIST', KEYS[4])
end
return {1, version, clock}
"#;

/// Removes a record and its history, its names taken off their counters and its place
/// among the deadlines.
pub(super) const REMOVE: &str = r#"
local counted, names = redis.call('HGET', KEYS[1], 'ck'), redis.call('HGET', KEYS[1], 'cn')
if counted then
  for name in string.gmatch(names, '[^\n]+') do redis.call('HINCRBY', counted, name, -1) end
end
redis.call('ZREM', KEYS[3], ARGV[1])
return redis.call('DEL', KEYS[1], KEYS[2])
"#;

/// A record's history, only while the record exists.
pub(super) const HISTORY: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return {}
end
return redis.call('LRANGE', KEYS[2], 0, -1)
"#;

/// A sliding-window log in a sorted set, on the Redis server's clock: at most `calls` in
/// every window of `per` milliseconds, and the exact wait when over.
pub(super) const SPEND_WINDOW: &str = r#"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local per = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - per)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], per)
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local wait = tonumber(oldest[2]) + per - now
if wait < 1 then wait = 1 end
return {0, wait}
"#;

pub(super) const RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"#;

pub(super) const RENEW: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"#;

/// The scripts, loaded once per store.
pub(super) struct Scripts {
    pub(super) compare_and_set: redis::Script,
    pub(super) release: redis::Script,
    pub(super) renew: redis::Script,
    pub(super) spend_window: redis::Script,
    pub(super) history: redis::Script,
    pub(super) remove: redis::Script,
}

impl Scripts {
    pub(super) fn new() -> Self {
        Self {
            compare_and_set: redis::Script::new(COMPARE_AND_SET),
            release: redis::Script::new(RELEASE),
            renew: redis::Script::new(RENEW),
            spend_window: redis::Script::new(SPEND_WINDOW),
            history: redis::Script::new(HISTORY),
            remove: redis::Script::new(REMOVE),
        }
    }
}

//! fleet.lua's rules against their Rust twins (`rules/cubic.rs`,
//! `rules/budget.rs`) on a real redis-server, over the vectors the Rust tables
//! use (`vectors` in each): every answer equal to the last bit, so that a
//! change to one side without the other fails here.
//!
//! A driver appended to the scripts' own text (the bounds written from the
//! Rust constants, then `clock.lua`, `checked.lua` and `fleet.lua`, as the
//! admit and record scripts start) calls one Lua function per EVAL. Redis
//! truncates a Lua number in a reply to an integer, so rates come back as the
//! scripts write them (`rate_text`, `%.17g`, which every double survives) and
//! are compared by their bits.

use ::redis::{Connection, FromRedisValue, Script};

use super::source;
use crate::rules::budget::vectors::{ROOM, START, Step, traffic};
use crate::rules::budget::{Traffic, Window};
use crate::rules::cubic::vectors::{AWS, AWS_CURVE, AWS_MIXED, BOTOCORE_ZERO_POINTS, CUTS, RATES, SPACINGS, STORED};
use crate::rules::cubic::{Learned, spacing_ms};
use crate::state::test_support::redis::Redis;

/// ARGV[1] names what to call, the rest are its arguments (a learned rate as
/// `w, cut`, `w` empty for none; a count's traffic as the JSON a key holds, empty for none).
const DRIVER: &str = r#"
local f, a = ARGV[1], ARGV
local function n(i) return tonumber(a[i]) end
local function raw(i) if a[i] == '' then return nil end return a[i] end
local function learned(i) if a[i] == '' then return nil end return {w = n(i), cut = n(i + 1)} end
if f == 'learned_rate' then return rate_text(learned_rate(learned(2), n(4))) end
if f == 'zero_point' then return rate_text(zero_point(n(2))) end
if f == 'cut' then
  local after = cut(learned(2), n(4), n(5))
  return {rate_text(after.w), after.cut}
end
if f == 'spacing_of' then
  local spacings = {}
  for i = 2, #a do spacings[#spacings + 1] = spacing_of(n(i)) end
  return spacings
end
if f == 'stored_learned' then return stored_learned(raw(2), n(3)) and 1 or 0 end
if f == 'has_room' then return has_room(n(2), n(3), n(4), n(5)) and 1 or 0 end
-- As admit.lua counts a request: the key read, checked, counted, written back.
if f == 'count' then return cjson.encode(counted(stored_traffic(raw(2), n(3)), n(3), a[4] == '1')) end
if f == 'read' then
  local list = stored_traffic(raw(2), n(3))
  local requests, retries = window(list, n(3))
  return {requests, retries, rate_text(last_second(list, n(3)))}
end
return redis.error_reply('the driver has no ' .. f)
"#;

/// A redis-server, and a connection that runs the driver on it.
struct Lua {
    _server: Redis,
    connection: Connection,
    script: Script,
}

impl Lua {
    /// `None` (after one loud `SKIPPED` line) where redis-server is missing.
    fn start() -> Option<Lua> {
        let server = Redis::start()?;
        let connection = server.connection();
        let parts = [include_str!("clock.lua"), include_str!("checked.lua"), include_str!("fleet.lua"), DRIVER];
        Some(Lua { _server: server, connection, script: Script::new(&source(&parts)) })
    }

    fn call<T: FromRedisValue>(&mut self, function: &str, args: &[String]) -> T {
        let mut invocation = self.script.prepare_invoke();
        invocation.arg(function);
        for arg in args {
            invocation.arg(arg);
        }
        invocation.invoke(&mut self.connection).unwrap_or_else(|e| panic!("{function}({args:?}) in Lua: {e}"))
    }

    /// A rate `function` answers, which must be `rust`'s to the bit.
    fn rate(&mut self, function: &str, args: &[String], rust: f64) -> f64 {
        let text: String = self.call(function, args);
        same(&text, rust, &format!("{function}({})", args.join(", ")))
    }
}

/// `x` as Lua's `tonumber` reads it back exactly (the shortest text that round-trips).
fn num(x: f64) -> String {
    format!("{x:?}")
}

/// The driver's arguments: a learned rate (`w, cut`, or two empty ones for none), then `rest`.
fn args(learned: Option<Learned>, rest: &[String]) -> Vec<String> {
    let learned = match learned {
        Some(learned) => [num(learned.sending), learned.cut_at.to_string()],
        None => [String::new(), String::new()],
    };
    learned.into_iter().chain(rest.iter().cloned()).collect()
}

/// The rate Lua wrote as `text`, which must be `rust` to the bit.
fn same(text: &str, rust: f64, what: &str) -> f64 {
    let lua: f64 = text.parse().unwrap_or_else(|e| panic!("{what}: Lua wrote {text:?}: {e}"));
    assert_eq!(lua.to_bits(), rust.to_bits(), "{what}: Lua {text}, Rust {rust:?}");
    lua
}

/// Within the printed digits of a published vector.
fn close(got: f64, want: f64, what: &str) {
    assert!((got - want).abs() < 1e-9, "{what}: {got:?}, the vector says {want:?}");
}

#[test]
fn the_learned_rate_in_lua_is_rusts_to_the_last_bit() {
    let Some(mut lua) = Lua::start() else { return };
    let (measured_at, cut_at, mixed) = AWS_MIXED;
    let after = Learned::cut(Some(AWS), AWS.rate(measured_at), cut_at);
    let curve = AWS_CURVE.map(|(now, want)| (AWS, now, want));
    for (learned, now, want) in curve.into_iter().chain(RATES).chain([(after, cut_at, mixed)]) {
        let got = lua.rate("learned_rate", &args(Some(learned), &[now.to_string()]), learned.rate(now));
        close(got, want, &format!("{learned:?} at {now} ms"));
    }
    for (sending, want) in BOTOCORE_ZERO_POINTS {
        let got = lua.rate("zero_point", &[num(sending)], Learned { sending, cut_at: 0 }.zero_point());
        close(got, want, &format!("botocore's K of {sending}"));
    }
    let mixed = (Some(AWS), AWS.rate(measured_at), cut_at, after.sending);
    for (before, measured, now, want) in CUTS.into_iter().chain([mixed]) {
        let rust = Learned::cut(before, measured, now);
        let args = args(before, &[num(measured), now.to_string()]);
        let (w, at): (String, u64) = lua.call("cut", &args);
        let got = same(&w, rust.sending, &format!("cut({})", args.join(", ")));
        close(got, want, &format!("cut({})", args.join(", ")));
        assert_eq!(at, rust.cut_at, "cut({})", args.join(", "));
    }
}

#[test]
fn stored_rates_are_checked_in_lua_as_in_rust() {
    let Some(mut lua) = Lua::start() else { return };
    for (sending, sound) in STORED {
        // As record.lua writes it; a rate no JSON holds (NaN) is what another writer might leave.
        let json = format!(r#"{{"w_max":{},"cut_at_ms":{START}}}"#, num(sending));
        let kept: u8 = lua.call("stored_learned", &[json.clone(), START.to_string()]);
        assert_eq!(kept == 1, Learned { sending, cut_at: START }.is_sound(), "{json}");
        assert_eq!(kept == 1, sound, "{json}");
    }
}

#[test]
fn the_spacing_of_a_rate_in_lua_is_rusts() {
    let Some(mut lua) = Lua::start() else { return };
    for (rate, want) in SPACINGS {
        let got: Vec<u64> = lua.call("spacing_of", &[num(rate)]);
        assert_eq!(got, [spacing_ms(rate)], "the spacing of {rate:?}");
        assert_eq!(got, [want], "the spacing of {rate:?}");
    }
    // The rates nearest each whole spacing, where a rounding could slip, and the AWS curve's.
    for ms in (1..=2_000_u32).step_by(100).chain(1..=20) {
        let mut rates: Vec<f64> = Vec::new();
        let mut rate = 1000.0 / f64::from(ms);
        for _ in 0..20 {
            rate = rate.next_down();
        }
        for _ in 0..40 {
            rates.push(rate);
            rate = rate.next_up();
        }
        rates.extend(AWS_CURVE.map(|(now, _)| AWS.rate(now)));
        let got: Vec<u64> = lua.call("spacing_of", &rates.iter().map(|rate| num(*rate)).collect::<Vec<_>>());
        let want: Vec<u64> = rates.iter().map(|rate| spacing_ms(*rate)).collect();
        assert_eq!(got, want, "the spacings of {rates:?}");
    }
}

#[test]
fn the_retry_budget_in_lua_is_rusts() {
    let Some(mut lua) = Lua::start() else { return };
    for (budget, counts, room) in ROOM {
        let args = [budget.percent.into(), budget.per_second.into(), counts.requests, counts.retries]
            .map(|n: u64| n.to_string());
        let got: u8 = lua.call("has_room", &args);
        assert_eq!(got == 1, budget.has_room(counts), "{budget:?}, {counts:?}");
        assert_eq!(got == 1, room, "{budget:?}, {counts:?}");
    }
}

#[test]
fn traffic_in_lua_counts_and_reads_as_in_rust() {
    let Some(mut lua) = Lua::start() else { return };
    for (n, table) in traffic().into_iter().enumerate() {
        let mut rust = Traffic::default();
        // What the key holds, as admit.lua writes it.
        let mut kept = String::new();
        for step in table {
            match step {
                Step::Count(at, retry) => {
                    rust.count(START + at, retry);
                    kept = lua.call("count", &[kept, (START + at).to_string(), u8::from(retry).to_string()]);
                    let read: Traffic = serde_json::from_str(&kept).unwrap_or_else(|e| panic!("{kept}: {e}"));
                    assert_eq!(read, rust, "table {n}, counted at {at}: Lua kept {kept}");
                }
                Step::Read(at, window, last_second) => {
                    let now = START + at;
                    let (requests, retries, text): (u64, u64, String) =
                        lua.call("read", &[kept.clone(), now.to_string()]);
                    assert_eq!(Window { requests, retries }, rust.window(now), "table {n}, at {at}");
                    assert_eq!(Window { requests, retries }, window, "table {n}, at {at}");
                    let got = same(&text, rust.last_second(now), &format!("table {n}: the last second at {at}"));
                    assert_eq!(got, last_second, "table {n}: the last second at {at}");
                }
                Step::Kept(seconds) => {
                    let list: Vec<serde_json::Value> = serde_json::from_str(&kept).unwrap_or_default();
                    assert_eq!(list.len(), seconds, "table {n}: Lua kept {kept}");
                }
            }
        }
    }
}

//! `--rate auto`: the rate a fleet learns from the server's `429`s, by the
//! AWS SDKs' adaptive retry mode (its CUBIC rule: β 0.7, C 0.4, at least 0.5
//! requests a second), over the requests of the whole fleet. Pure: time is
//! the store's epoch milliseconds passed in, the state is two numbers the
//! store keeps.
//!
//! At a `429` the rate becomes β times the rate the fleet was sending at
//! (the lower of what it measured and the rate in force); between `429`s it
//! follows `C (t - K)³ + W`, `W` the rate at the last cut and `K` the time
//! the curve takes to climb back to it, then grows past it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The share of the rate kept at a `429`.
pub const BETA: f64 = 0.7;
/// How fast the rate grows back.
pub const SCALE: f64 = 0.4;
/// The slowest a learned rate goes, in requests a second.
pub const MIN_RATE: f64 = 0.5;
/// The fastest a learned rate can say: past it, a stored rate is no rate poll wrote.
pub const MAX_RATE: f64 = 1_000_000.0;

/// The rate learned at the last `429`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Learned {
    /// The rate the fleet was sending at, in requests a second (the curve's `W`).
    #[serde(rename = "w_max")]
    pub sending: f64,
    /// Epoch ms of the cut.
    #[serde(rename = "cut_at_ms")]
    pub cut_at: u64,
}

impl Learned {
    /// The rate in force at `now`, in requests a second.
    pub fn rate(&self, now: u64) -> f64 {
        let since = now.saturating_sub(self.cut_at) as f64 / 1000.0;
        // `powf`, the C library's pow, as Redis's Lua computes the same rule (fleet.lua): to the
        // last bit, which `state/redis/twins.rs` checks.
        let rate = SCALE * (since - self.zero_point()).powf(3.0) + self.sending;
        bounded(rate)
    }

    /// `K`: the seconds the curve takes from the cut back to the rate cut.
    pub(crate) fn zero_point(&self) -> f64 {
        (self.sending * (1.0 - BETA) / SCALE).powf(1.0 / 3.0)
    }

    /// What a `429` at `now` leaves, while the fleet sent `measured`
    /// requests a second over its last second, and `learned` was in force.
    pub fn cut(learned: Option<Learned>, measured: f64, now: u64) -> Learned {
        let sending = match learned {
            Some(learned) => measured.min(learned.rate(now)),
            None => measured,
        };
        Learned { sending: bounded(sending), cut_at: now }
    }

    /// Whether these values are a rate poll wrote: a finite number of
    /// requests a second within bounds.
    pub fn is_sound(&self) -> bool {
        self.sending.is_finite() && (MIN_RATE..=MAX_RATE).contains(&self.sending)
    }
}

/// The spacing of `rate` requests a second in whole milliseconds, as
/// [`whole_ms`] rounds it: `1000 / rate`, rounded up. fleet.lua's `spacing_of`
/// is its twin (the script reads the learned rate, so it cannot be handed the
/// spacing), checked by `state/redis/twins.rs`.
pub fn spacing_ms(rate: f64) -> u64 {
    let ms = 1000.0 / bounded(rate);
    // Up to the nanosecond first: never below `ms`, and a whole `ms` stays whole
    // (at most 2000 ms, so `ms * 1e6` rounds by far less than 1 ns), so this is `ms.ceil()`.
    whole_ms(Duration::from_nanos((ms * 1e6).ceil() as u64))
}

/// A spacing in whole milliseconds, rounded up so that a rate is never
/// exceeded (`3/s` is 334 ms apart, not 333); at least 1 ms. The one rounding
/// of both rates: `--rate N/DURATION` (`bucket.rs`) and the learned one.
pub(crate) fn whole_ms(spacing: Duration) -> u64 {
    u64::try_from(spacing.as_nanos().div_ceil(1_000_000)).unwrap_or(u64::MAX).max(1)
}

/// `rate` within [`MIN_RATE`] and [`MAX_RATE`]; not a number is the slowest.
fn bounded(rate: f64) -> f64 {
    if rate.is_nan() { MIN_RATE } else { rate.clamp(MIN_RATE, MAX_RATE) }
}

/// The table tests' vectors, shared with fleet.lua's test (`state/redis/twins.rs`),
/// so that the Rust rule and its Lua twin answer the same rows.
#[cfg(test)]
pub(crate) mod vectors {
    use super::{Learned, MAX_RATE, MIN_RATE};

    /// The AWS SDK for Go v2's test vectors (`TestAdaptiveRateLimit_cubic` in
    /// <https://github.com/aws/aws-sdk-go-v2/blob/main/aws/retry/adaptive_ratelimit_test.go>):
    /// a rate of 10 cut at t = 5 s, the rate the curve gives each second after.
    pub(crate) const AWS: Learned = Learned { sending: 10.0, cut_at: 5_000 };
    /// (now, the rate in force), rates as printed there: equal within 1e-9.
    pub(crate) const AWS_CURVE: [(u64, f64); 7] = [
        (5_000, 7.0),
        (6_000, 9.64893600966),
        (7_000, 10.000030849917364),
        (8_000, 10.453284520772092),
        (9_000, 13.408697022224185),
        (10_000, 21.26626835427364),
        (11_000, 36.425998516920465),
    ];
    /// The same file's "mixed" case: throttled at t = 7 s after the rate of t = 6 s
    /// was in force: (measured at, cut at, the rate then).
    pub(crate) const AWS_MIXED: (u64, u64, f64) = (6_000, 7_000, 6.754255206761999);

    /// botocore's (<https://github.com/boto/botocore/blob/develop/tests/unit/retries/test_throttling.py>):
    /// the rate cut, and K, the seconds the curve takes back to it.
    pub(crate) const BOTOCORE_ZERO_POINTS: [(f64, f64); 2] = [(10.0, 1.9574338205844317), (8.0, 1.8171205928321397)];

    /// (the rate in force, what the fleet was measured sending, now, the rate cut):
    /// a cut takes the lower of the two, within the bounds.
    pub(crate) const CUTS: [(Option<Learned>, f64, u64, f64); 6] = [
        // Measured 50 a second while 7 was in force: the fleet's 50 were sent before the cut.
        (Some(Learned { sending: 10.0, cut_at: 0 }), 50.0, 0, 7.0),
        // No rate yet: what the fleet was sending.
        (None, 50.0, 0, 50.0),
        (None, 8.0, 1_000, 8.0),
        // Never below the floor, never past the ceiling.
        (None, 0.0, 0, MIN_RATE),
        (None, f64::INFINITY, 0, MAX_RATE),
        (Some(Learned { sending: 10.0, cut_at: 0 }), 1e9, 1_000_000, MAX_RATE),
    ];

    /// (a learned rate, now, the rate in force).
    pub(crate) const RATES: [(Learned, u64, f64); 6] = [
        (Learned { sending: 8.0, cut_at: 1_000 }, 1_000, 8.0 * 0.7), // cut by β
        (Learned { sending: 0.5, cut_at: 1_000 }, 1_000, MIN_RATE),  // never below the floor
        (Learned { sending: 10.0, cut_at: 0 }, u64::MAX, MAX_RATE),
        (Learned { sending: 10.0, cut_at: 5_000 }, 0, 7.0), // a clock before the cut is at the cut
        // Between whole seconds (ours, from the formula).
        (Learned { sending: 10.0, cut_at: 5_000 }, 6_789, 9.998088616243551),
        (Learned { sending: 7.3, cut_at: 1_000 }, 3_217, 7.337555562448463),
    ];

    /// (a rate, its spacing in ms).
    pub(crate) const SPACINGS: [(f64, u64); 6] =
        [(10.0, 100), (7.1, 141), (3.0, 334), (0.0, 2_000), (f64::NAN, 2_000), (MAX_RATE, 1)];

    /// (a stored rate, whether poll could have written it).
    pub(crate) const STORED: [(f64, bool); 7] =
        [(7.1, true), (0.5, true), (MAX_RATE, true), (-1.0, false), (f64::NAN, false), (1e7, false), (0.1, false)];
}

#[cfg(test)]
mod tests {
    use super::vectors::*;
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_curve_follows_the_aws_sdks_vectors() {
        for (now, want) in AWS_CURVE {
            let got = AWS.rate(now);
            assert!(close(got, want), "at {now} ms: {got}, want {want}");
        }
        let (measured_at, cut_at, want) = AWS_MIXED;
        let cut = Learned::cut(Some(AWS), AWS.rate(measured_at), cut_at);
        assert!(close(cut.rate(cut_at), want), "{}", cut.rate(cut_at));
    }

    #[test]
    fn the_zero_point_and_the_cut_follow_botocores_vectors() {
        for (sending, want) in BOTOCORE_ZERO_POINTS {
            let got = Learned { sending, cut_at: 0 }.zero_point();
            assert!(close(got, want), "{sending}: {got}, want {want}");
        }
        let cut = Learned::cut(None, 8.0, 1_000);
        // At t = K the curve is back at the rate cut, past it after.
        assert!((cut.rate(1_000 + 1_817) - 8.0).abs() < 1e-3);
        assert!(cut.rate(1_000 + 4_000) > 8.0);
    }

    #[test]
    fn a_cut_takes_the_lower_of_what_was_measured_and_the_rate_in_force() {
        for (learned, measured, now, want) in CUTS {
            let cut = Learned::cut(learned, measured, now);
            assert!(close(cut.sending, want), "{learned:?}, {measured}: {cut:?}, want {want}");
            assert_eq!(cut.cut_at, now);
        }
        for (learned, now, want) in RATES {
            assert!(close(learned.rate(now), want), "{learned:?} at {now}: {}, want {want}", learned.rate(now));
        }
    }

    #[test]
    fn stored_rates_are_checked() {
        for (sending, sound) in STORED {
            assert_eq!(Learned { sending, cut_at: 0 }.is_sound(), sound, "{sending}");
        }
    }

    #[test]
    fn spacing_rounds_up() {
        for (rate, want) in SPACINGS {
            assert_eq!(spacing_ms(rate), want, "{rate}");
        }
    }

    /// Through the nanoseconds, the spacing is still `1000 / rate` rounded up, which
    /// fleet.lua computes: at the rates nearest each whole spacing, where it could slip.
    #[test]
    fn the_spacing_is_1000_over_the_rate_rounded_up_to_the_bit() {
        for ms in 1..=2_000_u32 {
            let mut rate = 1000.0 / f64::from(ms);
            for _ in 0..50 {
                rate = rate.next_down();
            }
            for _ in 0..100 {
                let want = ((1000.0 / bounded(rate)).ceil() as u64).max(1);
                assert_eq!(spacing_ms(rate), want, "{rate:?}");
                rate = rate.next_up();
            }
        }
    }
}

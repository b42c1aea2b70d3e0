//! Time left, as a socket timeout the system honours. Windows takes a
//! socket's timeout in whole milliseconds, Unix in a `timeval`'s whole
//! microseconds, socket2 cuts a `Duration` down to that unit, and a timeout
//! of zero means none at all to both: 0.6 ms left used to become a read that
//! waited for the server however long it took. Every socket timeout `poll`
//! sets goes through [`socket`]; std's own conversions (`connect_timeout`,
//! `recv_timeout`, sleeps and condition variables) round up already.

use std::time::Duration;

/// The smallest socket timeout the platform takes: SO_RCVTIMEO's milliseconds.
#[cfg(windows)]
const UNIT: Duration = Duration::from_millis(1);

/// The smallest socket timeout the platform takes: a `timeval`'s microseconds.
#[cfg(not(windows))]
const UNIT: Duration = Duration::from_micros(1);

/// `left` (more than zero: callers end as timed out on nothing left) as a
/// socket timeout: rounded up to the platform's unit, so never zero.
///
/// Rounded up rather than ending as timed out below one unit: a read whose
/// bytes are already there returns at once whatever its timeout, so a
/// remainder under the unit still gets its try, and it ends at most one unit
/// late (the transport allows 1 ms of that). Rounded down, as socket2 does,
/// it would also end early and be tried again for the crumb left.
pub(crate) fn socket(left: Duration) -> Duration {
    round_up(left, UNIT)
}

/// `d` rounded up to a whole number of `unit`s (a unit that divides a
/// second), at least one; a `d` too large to round stays as it is (years).
fn round_up(d: Duration, unit: Duration) -> Duration {
    let unit_nanos = unit.subsec_nanos();
    if d < unit {
        return unit;
    }
    match d.subsec_nanos() % unit_nanos {
        0 => d,
        over => d.checked_add(Duration::from_nanos(u64::from(unit_nanos - over))).unwrap_or(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const US: Duration = Duration::from_micros(1);

    #[test]
    fn a_remainder_under_a_millisecond_is_one_on_windows() {
        assert_eq!(round_up(Duration::from_micros(500), MS), MS);
        assert_eq!(round_up(Duration::ZERO, MS), MS, "zero would be no timeout");
        assert_eq!(round_up(Duration::from_nanos(1), MS), MS);
        assert_eq!(round_up(Duration::from_micros(297_400), MS), Duration::from_millis(298), "not 297: early");
        assert_eq!(round_up(Duration::from_millis(300), MS), Duration::from_millis(300));
        assert_eq!(round_up(Duration::from_secs(1) - US, MS), Duration::from_secs(1), "carried into the seconds");
    }

    #[test]
    fn a_remainder_under_a_microsecond_is_one_on_unix() {
        assert_eq!(round_up(Duration::from_nanos(500), US), US);
        assert_eq!(round_up(Duration::ZERO, US), US, "zero would be no timeout");
        assert_eq!(round_up(Duration::from_nanos(1_500), US), Duration::from_micros(2));
        assert_eq!(round_up(Duration::from_micros(300), US), Duration::from_micros(300));
    }

    #[test]
    fn a_large_value_stays_large() {
        let day = Duration::from_secs(86_400);
        assert_eq!(round_up(day, MS), day);
        assert_eq!(round_up(day + Duration::from_nanos(1), US), day + US);
        // The largest Duration cannot round up: it stays, as long as ever.
        assert_eq!(round_up(Duration::MAX, MS), Duration::MAX);
        assert_eq!(round_up(Duration::from_secs(u64::MAX), US), Duration::from_secs(u64::MAX));
    }

    #[test]
    fn this_platform_rounds_to_its_own_unit() {
        // 0.5 ms on Windows, 0.5 µs elsewhere: one unit, never the zero that is no timeout.
        let unit = if cfg!(windows) { MS } else { US };
        assert_eq!(socket(unit / 2), unit);
        assert_eq!(socket(Duration::ZERO), unit);
        assert_eq!(socket(unit + unit / 2), unit * 2);
        assert_eq!(socket(Duration::from_secs(30)), Duration::from_secs(30));
    }
}

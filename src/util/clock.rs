//! Wall-clock time in whole milliseconds: the unit the shared state keeps time
//! in, in a file or in Redis, so that every process reads it the same way.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Epoch milliseconds now (0 before 1970).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, ms)
}

/// A duration in whole milliseconds, saturating.
pub(crate) fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milliseconds_round_down_and_saturate() {
        assert_eq!(ms(Duration::from_micros(1_999)), 1);
        assert_eq!(ms(Duration::MAX), u64::MAX);
        assert!(now_ms() > 1_700_000_000_000);
    }
}

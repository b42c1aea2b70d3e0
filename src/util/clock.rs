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

/// A number of milliseconds as a state file keeps it (a time, or a
/// duration), for serde's `deserialize_with`: a negative one is no error
/// that sets the whole file aside, only a value out of bounds. It reads as
/// `u64::MAX`, past every bound, so that the one check of stored values
/// (`Origin::checked`) makes it absent, as it does a time too far away.
/// Anything else that is no whole number still fails the file.
pub(crate) fn stored_ms<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    struct Ms;

    impl serde::de::Visitor<'_> for Ms {
        type Value = u64;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a whole number of milliseconds")
        }

        fn visit_u64<E: serde::de::Error>(self, ms: u64) -> Result<u64, E> {
            Ok(ms)
        }

        fn visit_i64<E: serde::de::Error>(self, ms: i64) -> Result<u64, E> {
            Ok(u64::try_from(ms).unwrap_or(u64::MAX))
        }

        fn visit_f64<E: serde::de::Error>(self, ms: f64) -> Result<u64, E> {
            match ms < 0.0 {
                true => Ok(u64::MAX),
                false => Err(E::invalid_type(serde::de::Unexpected::Float(ms), &self)),
            }
        }
    }

    deserializer.deserialize_u64(Ms)
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

    #[test]
    fn a_stored_negative_time_reads_as_out_of_bounds_and_other_odd_numbers_fail() {
        #[derive(serde::Deserialize)]
        struct Stored(#[serde(deserialize_with = "stored_ms")] u64);
        let read = |text: &str| serde_json::from_str::<Stored>(text).map(|kept| kept.0).map_err(|e| e.to_string());
        assert_eq!(read("12"), Ok(12));
        assert_eq!(read("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(read("-1"), Ok(u64::MAX));
        assert_eq!(read("-9223372036854775808"), Ok(u64::MAX));
        assert_eq!(read("-0.5"), Ok(u64::MAX));
        assert!(read("1.5").is_err_and(|e| e.contains("expected a whole number of milliseconds")));
        assert!(read("\"soon\"").is_err());
        assert!(read("18446744073709551616").is_err(), "past u64 is a float");
    }
}

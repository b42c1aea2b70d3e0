//! Retry-After and every rate-limit header form: arbitrary header lines must
//! parse to some advice or none, never panic.
#![no_main]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use poll::advice::{self, Advice};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let now = UNIX_EPOCH + Duration::from_secs(1_795_000_000);
    let headers: Vec<(&str, &str)> = text.lines().filter_map(|line| line.split_once(':')).collect();
    let _ = Advice::from_headers(headers.iter().copied(), now);
    for now in [now, UNIX_EPOCH, SystemTime::UNIX_EPOCH + Duration::from_secs(u32::MAX as u64 * 4)] {
        let _ = advice::retry_after(&text, now);
        let _ = advice::reset(&text, now);
    }
});

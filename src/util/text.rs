//! Text for people: what came from outside made safe for a terminal, long
//! values shortened, durations and counts in words.

use std::time::{Duration, UNIX_EPOCH};

/// Text from outside (a body, a header, a typed flag) with its control
/// characters escaped (`\u{1b}`, `\r`): it can neither break a line apart
/// nor send escape sequences to the terminal.
pub(crate) fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_debug().to_string() } else { c.to_string() }).collect()
}

/// `text` cut to its first 60 characters, so that a long value (a `--show`
/// output, a 4 KiB filter) keeps its line readable.
pub(crate) fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// A duration rounded to what a person reads: `1.2s`, `350ms`, `2h 5m`.
pub(crate) fn human(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else if d < Duration::from_secs(60) {
        format!("{:.1}s", d.as_secs_f64())
    } else {
        humantime::format_duration(Duration::from_secs(d.as_secs())).to_string()
    }
}

/// `1 attempt`, `3 attempts`.
pub(crate) fn count(n: u32, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// An epoch-ms instant `in_ms` from now for people: RFC 3339 and how far
/// ahead, e.g. `2026-11-30T01:44:00Z (in 25s)`.
pub(crate) fn when(now_ms: u64, in_ms: u64) -> String {
    let stamp = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_millis(now_ms.saturating_add(in_ms)));
    let secs = in_ms.div_ceil(1000);
    format!("{stamp} (in {})", humantime::format_duration(Duration::from_secs(secs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[31mb\r\n"), r"a\u{1b}[31mb\r\n");
        assert_eq!(printable("plain · text"), "plain · text");
    }

    #[test]
    fn long_text_is_cut_at_60_characters() {
        assert_eq!(shorten("short"), "short");
        let long = "é".repeat(70);
        assert_eq!(shorten(&long), format!("{}…", "é".repeat(60)));
    }

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        assert_eq!(human(Duration::from_millis(350)), "350ms");
        assert_eq!(human(Duration::from_millis(1_234)), "1.2s");
        assert_eq!(human(Duration::from_secs(7_500)), "2h 5m");
        assert_eq!(count(1, "attempt"), "1 attempt");
        assert_eq!(count(0, "attempt"), "0 attempts");
    }

    #[test]
    fn when_is_rfc3339_and_relative() {
        assert_eq!(when(0, 25_000), "1970-01-01T00:00:25Z (in 25s)");
        assert_eq!(when(0, 90_500), "1970-01-01T00:01:30Z (in 1m 31s)");
        assert_eq!(when(5_000, 0), "1970-01-01T00:00:05Z (in 0s)");
    }
}

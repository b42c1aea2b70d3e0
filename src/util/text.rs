//! Text for people: what came from outside made safe for a terminal, long
//! values shortened, durations and counts in words.

use std::fmt::Write as _;
use std::time::{Duration, UNIX_EPOCH};

/// Text from outside (a body, a header, a typed flag) with its control
/// characters escaped (`\u{1b}`, `\r`), and the invisible ones that change
/// how a line reads (bidirectional overrides, zero-width characters, line
/// separators): it can neither break a line apart, send escape sequences to
/// the terminal, nor show other text than it holds.
pub(crate) fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if hidden(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// A JSON value as one line of the JSON log (`--log-format json`), with
/// every character [`printable`] escapes written as JSON's own `\uXXXX`.
/// serde_json escapes only what JSON must (below U+0020, `"` and `\`); the
/// rest (DEL, C1 controls, bidirectional and zero-width characters) would
/// reach the terminal raw. Escaped this way the line is still JSON and
/// decodes to the very text the server sent, so a consumer (`jq`) reads it
/// as it was, while a person reading the log sees nothing hidden: the JSON
/// log's form of [`printable`], which the text reporter uses.
pub(crate) fn json_line(value: &serde_json::Value) -> String {
    let text = value.to_string();
    let mut out = String::with_capacity(text.len());
    // These characters sit only inside JSON strings: the rest of the line is ASCII.
    for c in text.chars() {
        if hidden(c) {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// What no output shows as it is: control characters, and the invisible ones.
fn hidden(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Characters that show nothing yet change how the text around them reads.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

/// The longest value a message quotes, in characters.
const MAX_QUOTED: usize = 200;

/// A value for a message, cut to its first 200 characters (`... N bytes
/// more`), so that a jq error on a 10 MB body stays one short line.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED) {
        Some((at, _)) => format!("{}... {} bytes more", &text[..at], text.len() - at),
        None => text.to_string(),
    }
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

/// Two durations in words that read differently when they differ: `2.0s`
/// and `1.996s` where [`human`]'s one decimal would say `2.0s` twice.
pub(crate) fn human_pair(a: Duration, b: Duration) -> (String, String) {
    let (first, second) = (human(a), human(b));
    if first != second || a.as_millis() == b.as_millis() {
        return (first, second);
    }
    let precise = |d: Duration| match d < Duration::from_secs(1) {
        true => format!("{}ms", d.as_millis()),
        false => format!("{:.3}s", d.as_secs_f64()),
    };
    (precise(a), precise(b))
}

/// `1 attempt`, `3 attempts`.
pub(crate) fn count(n: u32, thing: &str) -> String {
    if n == 1 { format!("1 {thing}") } else { format!("{n} {thing}s") }
}

/// An epoch-ms instant `in_ms` from now for people: RFC 3339 and how far
/// ahead, e.g. `2026-11-30T01:44:00Z (in 25s)`.
pub(crate) fn when(now_ms: u64, in_ms: u64) -> String {
    let ahead = humantime::format_duration(Duration::from_secs(in_ms.div_ceil(1000)));
    // RFC 3339 ends with the year 9999; a time past it (from a hostile store) is said without a date.
    let at = now_ms.checked_add(in_ms).filter(|at| *at < LAST_RFC3339_MS);
    match at.and_then(|at| UNIX_EPOCH.checked_add(Duration::from_millis(at))) {
        Some(at) => format!("{} (in {ahead})", humantime::format_rfc3339_seconds(at)),
        None => format!("in {ahead}"),
    }
}

/// 10000-01-01T00:00:00Z in epoch milliseconds: the end of the times RFC 3339
/// can write, and the bound of every number Redis's scripts read.
pub(crate) const LAST_RFC3339_MS: u64 = 253_402_300_800_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_durations_that_differ_never_read_the_same() {
        let pair = |a: u64, b: u64| human_pair(Duration::from_millis(a), Duration::from_millis(b));
        assert_eq!(pair(2_000, 1_996), ("2.000s".to_string(), "1.996s".to_string()));
        assert_eq!(pair(2_000, 1_500), ("2.0s".to_string(), "1.5s".to_string()));
        assert_eq!(pair(2_000, 2_000), ("2.0s".to_string(), "2.0s".to_string()));
        assert_eq!(pair(90_200, 90_700), ("90.200s".to_string(), "90.700s".to_string()));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(printable("a\u{1b}[31mb\r\n"), r"a\u{1b}[31mb\r\n");
        assert_eq!(printable("plain · text"), "plain · text");
    }

    #[test]
    fn invisible_characters_are_escaped() {
        let text = "a\u{202e}b\u{2066}c\u{200b}d\u{feff}e\u{2028}f\u{200d}";
        assert_eq!(printable(text), r"a\u{202e}b\u{2066}c\u{200b}d\u{feff}e\u{2028}f\u{200d}");
        assert_eq!(printable("é ü 日本 🙂"), "é ü 日本 🙂");
    }

    #[test]
    fn json_lines_escape_what_printable_escapes_and_decode_to_the_same_text() {
        let text = "a\u{202e}b\u{2066}c\u{200b}d\u{feff}e\u{2028}f\u{7f}g\u{9b}h\u{1b}i\né 日本 🙂\"\\";
        let line = json_line(&serde_json::json!({ "note": text }));
        assert_eq!(line, r#"{"note":"a\u202eb\u2066c\u200bd\ufeffe\u2028f\u007fg\u009bh\u001bi\né 日本 🙂\"\\"}"#);
        assert!(!line.chars().any(hidden));
        let decoded: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        assert_eq!(decoded["note"], text);
    }

    #[test]
    fn long_values_are_cut_with_what_is_left() {
        assert_eq!(cut("short"), "short");
        let long = "x".repeat(5_000);
        assert_eq!(cut(&long), format!("{}... 4800 bytes more", "x".repeat(200)));
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
        assert_eq!(
            when(u64::MAX, u64::MAX),
            format!("in {}", humantime::format_duration(Duration::from_secs(u64::MAX / 1000 + 1)))
        );
    }
}

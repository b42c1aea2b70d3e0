//! W3C Trace Context: with `TRACEPARENT` in the environment (as CI systems
//! and OpenTelemetry's environment carriers set it), each request carries a
//! `traceparent` of the same trace with a new span id of its own, and
//! `tracestate` from `TRACESTATE`, so that the server's traces join the
//! pipeline's; `-- CMD` is handed the trace too. Plain values in, plain values
//! out: the loop draws the span ids.

/// The trace a run's requests join.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trace {
    /// 32 lowercase hex digits, not all zero.
    trace_id: String,
    /// The trace flags: `sampled` (`01`) or none (`00`), the only flag W3C's level 1 defines.
    sampled: bool,
    /// `TRACESTATE`, passed on as it is when W3C's rules take it.
    state: Option<String>,
    /// Why `TRACESTATE` was dropped, for the run's one warning.
    dropped: Option<&'static str>,
}

impl Trace {
    /// The trace of `TRACEPARENT` (and `TRACESTATE`); `Ok(None)` without one,
    /// `Err` with the warning's words for one that is not W3C's.
    pub(crate) fn from_environment(parent: Option<&str>, state: Option<&str>) -> Result<Option<Trace>, String> {
        let Some(parent) = parent.map(str::trim).filter(|parent| !parent.is_empty()) else { return Ok(None) };
        let fields: Vec<&str> = parent.split('-').collect();
        let hex = |field: &str, len: usize| {
            field.len() == len && field.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        };
        let valid = match fields.as_slice() {
            // Version 00 has exactly four fields; a later version may add more after them.
            [version, trace, span, flags, rest @ ..] => {
                hex(version, 2)
                    && *version != "ff"
                    && (rest.is_empty() || *version != "00")
                    && hex(trace, 32)
                    && trace.bytes().any(|b| b != b'0')
                    && hex(span, 16)
                    && span.bytes().any(|b| b != b'0')
                    && hex(flags, 2)
            }
            _ => false,
        };
        if !valid {
            return Err(
                "TRACEPARENT is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>); no trace header is sent".into()
            );
        }
        // Flags other than `sampled` are not passed on: W3C's level 1 says to set the ones it does not define to 0.
        let sampled = u8::from_str_radix(fields[3], 16).is_ok_and(|flags| flags & 1 == 1);
        let state = state.map(str::trim).filter(|state| !state.is_empty());
        let (state, dropped) = match state.map(tracestate_fault) {
            None => (None, None),
            Some(Some(why)) => (None, Some(why)),
            Some(None) => (state.map(str::to_string), None),
        };
        Ok(Some(Trace { trace_id: fields[1].to_string(), sampled, state, dropped }))
    }

    /// The `traceparent` of a request (or of `-- CMD`) whose span is `span`
    /// (a zero span, which W3C forbids, is made one).
    pub(crate) fn parent(&self, span: u64) -> String {
        format!("00-{}-{:016x}-{:02x}", self.trace_id, span.max(1), u8::from(self.sampled))
    }

    /// `tracestate`, passed on.
    pub(crate) fn state(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The warning for a `TRACESTATE` that W3C's rules reject, which is not sent.
    pub(crate) fn dropped_state(&self) -> Option<String> {
        self.dropped.map(|why| format!("TRACESTATE is not a W3C tracestate ({why}); no tracestate header is sent"))
    }
}

/// The most list-members a `tracestate` may have.
const MAX_MEMBERS: usize = 32;

/// Why W3C's rules reject `state` (a `tracestate` of `key=value` list-members
/// separated by commas, each with optional spaces or tabs around it, empty
/// members allowed), or `None` when they take it. Keys as level 2 writes them
/// (a lowercase letter or digit, then up to 255 of `a-z 0-9 _ - * / @`: level
/// 1's simple and multi-tenant keys among them), unique; values of 1 to 256
/// printable ASCII characters but `,` and `=` (spaces at its end are the member's own); at most
/// 32 members. A CR, LF or any other control character is refused here, so
/// no request is ever built with one.
fn tracestate_fault(state: &str) -> Option<&'static str> {
    let mut keys: Vec<&str> = Vec::new();
    for member in state.split(',').map(|member| member.trim_matches([' ', '\t'])) {
        if member.is_empty() {
            continue;
        }
        let Some((key, value)) = member.split_once('=') else { return Some("a list-member without `=`") };
        let key_char = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_-*/@".contains(&b);
        let first = key.bytes().next().is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
        if !first || key.len() > 256 || !key.bytes().all(key_char) {
            return Some("a key that is not 1 to 256 of a-z, 0-9, `_-*/@`, starting with a letter or digit");
        }
        let value_char = |b: u8| (0x20..=0x7e).contains(&b) && b != b',' && b != b'=';
        if value.is_empty() || value.len() > 256 || !value.bytes().all(value_char) {
            return Some("a value that is not 1 to 256 printable ASCII characters other than `,` and `=`");
        }
        if keys.contains(&key) {
            return Some("a key given twice");
        }
        keys.push(key);
        if keys.len() > MAX_MEMBERS {
            return Some("more than 32 list-members");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_w3c_traceparent_is_joined_with_a_new_span_and_anything_else_is_refused() {
        let trace = Trace::from_environment(Some(GOOD), Some("congo=t61rcWkgMzE")).ok().flatten();
        let Some(trace) = trace else { panic!("{GOOD} is valid") };
        assert_eq!(trace.parent(0xabc), "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000abc-01");
        assert_eq!(trace.parent(0), "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000001-01");
        assert_eq!(trace.state(), Some("congo=t61rcWkgMzE"));
        assert_eq!(Trace::from_environment(None, Some("x=1")), Ok(None));
        assert_eq!(Trace::from_environment(Some(" "), None), Ok(None));
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra";
        assert!(Trace::from_environment(Some(later), None).is_ok_and(|t| t.is_some()));
        for bad in [
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-xyz-00f067aa0ba902b7-01",
        ] {
            assert!(Trace::from_environment(Some(bad), None).is_err(), "{bad}");
        }
    }

    #[test]
    fn flags_other_than_sampled_are_sent_as_zero() {
        let parent = |flags: &str| {
            let given = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
            let trace = Trace::from_environment(Some(&given), None).ok().flatten();
            trace.map(|trace| trace.parent(1)[53..].to_string())
        };
        for (given, sent) in [("00", "00"), ("01", "01"), ("ff", "01"), ("fe", "00"), ("02", "00"), ("03", "01")] {
            assert_eq!(parent(given).as_deref(), Some(sent), "{given}");
        }
    }

    #[test]
    fn a_tracestate_w3c_rejects_is_dropped_with_its_reason_and_the_trace_kept() {
        let long = |n: usize| "v".repeat(n);
        let many = |n: usize| (0..n).map(|i| format!("k{i}=v")).collect::<Vec<_>>().join(",");
        let taken = [
            "congo=t61rcWkgMzE".to_string(),
            "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE".into(),
            " rojo=1 ,\tcongo=2\t, ,".into(),
            "tenant@vendor=x".into(),
            "0k=a value with spaces".into(),
            "a_-*/=!~".into(),
            format!("k={}", long(256)),
            format!("{}=v", "k".repeat(256)),
            many(32),
        ];
        for state in &taken {
            let trace = Trace::from_environment(Some(GOOD), Some(state)).ok().flatten();
            let Some(trace) = trace else { panic!("{state}: TRACEPARENT is valid") };
            assert_eq!((trace.state(), trace.dropped_state()), (Some(state.trim()), None), "{state:?}");
        }
        let rejected = [
            ("a=1\r\nx-injected: 1", "a value"),
            ("a=1\nb=2", "a value"),
            ("a=\u{7}", "a value"),
            ("a=1\tb", "a value"),
            ("a=", "a value"),
            ("a=b=c", "a value"),
            ("a=caf\u{e9}", "a value"),
            ("Congo=1", "a key"),
            ("_a=1", "a key"),
            ("a b=1", "a key"),
            ("=1", "a key"),
            ("novalue", "without `=`"),
            ("a=1,a=2", "twice"),
        ];
        let mut rejected: Vec<(String, &str)> = rejected.iter().map(|(s, w)| (s.to_string(), *w)).collect();
        rejected.push((format!("k={}", long(257)), "a value"));
        rejected.push((format!("{}=v", "k".repeat(257)), "a key"));
        rejected.push((many(33), "more than 32"));
        for (state, words) in &rejected {
            let trace = Trace::from_environment(Some(GOOD), Some(state)).ok().flatten();
            let Some(trace) = trace else { panic!("{state:?}: TRACEPARENT is valid, and still joined") };
            assert_eq!(trace.state(), None, "{state:?}");
            let warning = trace.dropped_state().unwrap_or_default();
            assert!(warning.starts_with("TRACESTATE is not a W3C tracestate ("), "{state:?}: {warning}");
            assert!(warning.contains(words), "{state:?}: {warning}");
            assert!(!warning.contains(state.as_str()), "the value is not quoted: {warning}");
        }
    }
}

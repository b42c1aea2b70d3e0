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
    /// The trace flags, 2 hex digits (`01`: sampled).
    flags: String,
    /// `TRACESTATE`, passed on as it is.
    state: Option<String>,
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
        let state = state.map(str::trim).filter(|state| !state.is_empty()).map(str::to_string);
        Ok(Some(Trace { trace_id: fields[1].to_string(), flags: fields[3].to_string(), state }))
    }

    /// The `traceparent` of a request (or of `-- CMD`) whose span is `span`
    /// (a zero span, which W3C forbids, is made one).
    pub(crate) fn parent(&self, span: u64) -> String {
        format!("00-{}-{:016x}-{}", self.trace_id, span.max(1), self.flags)
    }

    /// `tracestate`, passed on.
    pub(crate) fn state(&self) -> Option<&str> {
        self.state.as_deref()
    }
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
}

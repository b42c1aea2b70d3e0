//! Where headers, certificates and bodies meet the rest (issue 49): every header `poll` adds
//! (cookies from the jar, `Last-Event-ID`, `tracestate`) counted in the request's size, so that a
//! request goes out whole or not at all; `TRACESTATE` and `TRACEPARENT` held to W3C's rules;
//! `--cert FILE:PASSPHRASE` as curl reads it, with the passphrase in no output; an X.509 v1
//! client certificate; and words that say what happened (a TLS 1.2 server that wants a
//! certificate, a corrupt gzip stream, a body nested too deep).

use crate::support;

use std::process::Output;

use support::poll;
use support::process::{stderr, stdout, warnings};
use support::server::{Reply, Server};

const DONE: &str = r#"{"status":"done"}"#;
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `poll` with `TRACEPARENT` set to `parent` and `TRACESTATE` to `state`, then `args`.
fn traced(parent: &str, state: &str, args: &[&str]) -> Output {
    poll().env("TRACEPARENT", parent).env("TRACESTATE", state).args(args).output().expect("run poll")
}

/// A `TRACESTATE` that W3C's rules reject (a CR and LF, a control character, a bad key) is
/// dropped with one warning, as a bad `TRACEPARENT` is: the request goes out with its
/// `traceparent` and no `tracestate`, and no message speaks of a redirect.
#[test]
fn a_tracestate_w3c_rejects_is_dropped_with_one_warning_and_the_request_sent() {
    for state in ["congo=1\r\nx-injected: yes", "congo=t61\u{7}", "Congo=1", "congo=1\n"] {
        let server = Server::start(vec![Reply::json(200, DONE)]);
        let out = traced(TRACEPARENT, state, &[&server.url("/")]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(0), "{state:?}: {err}");
        assert_eq!(stdout(&out), DONE);
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert!(
            requests[0].header("traceparent").is_some_and(|p| p.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"))
        );
        assert_eq!(requests[0].header("x-injected"), None, "{state:?}");
        if state == "congo=1\n" {
            // A line end at the end is the variable's, not the value's: trimmed, and sent.
            assert_eq!(requests[0].header("tracestate"), Some("congo=1"));
            assert!(warnings(&out).is_empty(), "{err}");
            continue;
        }
        assert_eq!(requests[0].header("tracestate"), None, "{state:?}");
        let warned = warnings(&out);
        assert_eq!(warned.len(), 1, "{state:?}: {err}");
        assert!(warned[0].contains("TRACESTATE is not a W3C tracestate ("), "{}", warned[0]);
        assert!(warned[0].ends_with("); no tracestate header is sent"), "{}", warned[0]);
        assert!(!err.contains("redirect"), "{err}");
        assert_eq!(server.bad_requests(), 0);
    }
}

/// `TRACEPARENT`'s flags other than `sampled` are sent as 0 (W3C level 1), to the server and to
/// `-- CMD` alike.
#[test]
fn traceparent_flags_other_than_sampled_are_sent_as_zero() {
    for (flags, sent) in [("ff", "01"), ("fe", "00"), ("03", "01"), ("00", "00")] {
        let server = Server::start(vec![Reply::json(200, DONE)]);
        let parent = format!("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-{flags}");
        let out = traced(&parent, "congo=1", &[&server.url("/"), "--", "sh", "-c", "echo $TRACEPARENT"]);
        assert_eq!(out.status.code(), Some(0), "{flags}: {}", stderr(&out));
        let header = server.requests()[0].header("traceparent").unwrap_or_default().to_string();
        assert!(header.ends_with(&format!("-{sent}")) && header.len() == TRACEPARENT.len(), "{flags}: {header}");
        let handed = stdout(&out);
        assert!(handed.trim().ends_with(&format!("-{sent}")), "{flags}: {handed}");
    }
}

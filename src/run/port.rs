//! The attempt of a `tcp://` or `unix://` target: one connection opened and closed at once
//! (`net/probe.rs`), made into the rules' outcome (open, or a failure of the same classes as
//! an HTTP connect's: refused, unresolved, timed out) and decided on as a poll's reply is, so
//! that first contact, `--stable`, `--done-on refused`, the deadline and the reporter treat
//! both alike. Nothing is sent, so there is no body, status or request.

use std::time::Instant;

use crate::http::request::{Fault, Reply};
use crate::net::probe::{self, Knocked};
use crate::report::record::{PortSeen, Record};
use crate::rules::attempt::{Failure, Outcome, Phase};
use crate::run::target::{Counts, Halt, Loop};
use crate::util::headers::Headers;
use crate::util::url::Endpoint;

impl Loop<'_> {
    /// Attempt `counts.number` of a port target: a connection within `--connect-timeout`
    /// (never past the deadline), decided on and reported.
    pub(super) fn knock(
        &mut self,
        endpoint: &Endpoint,
        counts: &Counts,
        rng: &mut impl rand::Rng,
    ) -> Result<Record, Halt> {
        self.reporter.sending(counts.number);
        let connect = self.common.polling.client.connect_timeout;
        let bound = self.left().map_or(connect, |left| left.min(connect));
        let sent = Instant::now();
        let knock = probe::knock(endpoint, bound);
        let latency = sent.elapsed();
        self.common.cancel.check()?;
        let failure = match knock.knocked {
            Knocked::Open => None,
            Knocked::Refused => Some(Failure::Refused),
            Knocked::Unresolved => Some(Failure::Dns),
            Knocked::TimedOut => Some(Failure::ConnectTimeout),
            // Reset or unreachable: retried, and "not up yet" before a first contact, as a reset is.
            Knocked::Failed => Some(Failure::Reset),
            Knocked::NotASocket => Some(Failure::NotASocket),
            Knocked::NoPermission => Some(Failure::NoPermission),
        };
        let (reply, outcome) = match failure {
            // No reply: the record's status is none (`Record::status`), its body empty.
            None => {
                let opened = Reply { status: 0, headers: Headers::default(), body: Vec::new(), cut: false };
                (Ok(opened), Outcome::Open { met: true })
            }
            Some(failure) => {
                let fault = Fault::new(failure, knock.words.clone());
                (Err(fault), Outcome::Failed(failure))
            }
        };
        // Under --done-on an open port is "not yet": recorded as decide() reads it.
        let outcome = self.common.polling.policy.read(&outcome, Phase::Poll).into_owned();
        let words = match outcome {
            Outcome::Open { met: false } => format!("{}, not yet gone", knock.words),
            _ => knock.words,
        };
        let mut record = self.decided(reply, outcome, latency, counts, rng);
        record.port = Some(PortSeen { scheme: endpoint.scheme(), address: endpoint.address(), words });
        self.reporter.attempt(&self.request, &record);
        Ok(record)
    }
}

//! The Sentinels of a `redis+sentinel://` URL: which of them answers, and
//! where they say the master is (`SENTINEL get-master-addr-by-name`), asked
//! at the first step and again after the master failed.

use std::time::Instant;

use ::redis::{RedisResult, Value};

use super::node::{Dialer, Node};
use super::url::Addr;

/// Why the Sentinels named no master.
#[derive(Debug)]
pub(super) enum Unknown {
    /// No Sentinel answered: the last one's error.
    Unreachable(::redis::RedisError),
    /// The Sentinels that answered know no master of that name.
    NoMaster,
}

/// The Sentinels, and the connection to the one that answered last.
pub(super) struct Sentinels {
    addrs: Vec<Addr>,
    master: String,
    /// The Sentinel asked first next time: the last that answered.
    first: usize,
    nodes: Vec<Option<Node>>,
}

impl Sentinels {
    pub(super) fn new(addrs: &[Addr], master: &str) -> Sentinels {
        Sentinels {
            addrs: addrs.to_vec(),
            master: master.to_string(),
            first: 0,
            nodes: addrs.iter().map(|_| None).collect(),
        }
    }

    /// The name of the master, as the URL gives it.
    pub(super) fn master_name(&self) -> &str {
        &self.master
    }

    /// Where the master is now, asking each Sentinel in turn (the one that
    /// answered last first) until one knows, within `deadline`.
    pub(super) fn master(&mut self, deadline: Instant) -> Result<Addr, Unknown> {
        let mut failure = None;
        for turn in 0..self.addrs.len() {
            let i = (self.first + turn) % self.addrs.len();
            match self.ask(i, deadline) {
                Ok(Some(addr)) => {
                    self.first = i;
                    return Ok(addr);
                }
                Ok(None) => failure = failure.or(Some(Unknown::NoMaster)),
                Err(e) => {
                    let timed_out = e.is_timeout();
                    if !matches!(failure, Some(Unknown::NoMaster)) {
                        failure = Some(Unknown::Unreachable(e));
                    }
                    if timed_out && Instant::now() >= deadline {
                        break;
                    }
                }
            }
        }
        Err(failure.unwrap_or(Unknown::NoMaster))
    }

    fn ask(&mut self, i: usize, deadline: Instant) -> RedisResult<Option<Addr>> {
        let node = match &mut self.nodes[i] {
            Some(node) => node,
            slot => slot.insert(Dialer::sentinel().node(&self.addrs[i])),
        };
        let mut cmd = ::redis::cmd("SENTINEL");
        cmd.arg("get-master-addr-by-name").arg(&self.master);
        let reply = node.request(deadline, &cmd)?;
        Ok(master_addr(&reply))
    }
}

/// `[host, port]`, or nil for a master the Sentinel does not know.
fn master_addr(reply: &Value) -> Option<Addr> {
    let Value::Array(fields) = reply else { return None };
    let text = |value: &Value| match value {
        Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok(),
        Value::SimpleString(text) => Some(text.clone()),
        _ => None,
    };
    let host = text(fields.first()?)?;
    let port = text(fields.get(1)?)?.parse().ok().filter(|port| *port > 0)?;
    (!host.is_empty()).then(|| Addr::Tcp { host: host.to_ascii_lowercase(), port })
}

/// Whether the `ROLE` reply of a server says it is a master (an error reply,
/// say from a user not allowed `ROLE`, says nothing against it).
pub(super) fn is_master(reply: &RedisResult<Value>) -> bool {
    match reply {
        Ok(Value::Array(fields)) => {
            matches!(fields.first(), Some(Value::BulkString(role)) if role == b"master")
                || matches!(fields.first(), Some(Value::SimpleString(role)) if role == "master")
        }
        Ok(_) => false,
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn the_sentinels_answer_reads_as_an_address() {
        let addr = master_addr(&Value::Array(vec![bulk("127.0.0.1"), bulk("6380")]));
        assert_eq!(addr, Some(Addr::Tcp { host: "127.0.0.1".into(), port: 6380 }));
        for nothing in [
            Value::Nil,
            Value::Array(vec![bulk("h")]),
            Value::Array(vec![bulk("h"), bulk("0")]),
            Value::Array(vec![bulk(""), bulk("1")]),
        ] {
            assert_eq!(master_addr(&nothing), None, "{nothing:?}");
        }
        assert!(is_master(&Ok(Value::Array(vec![bulk("master"), Value::Int(0), Value::Array(vec![])]))));
        assert!(!is_master(&Ok(Value::Array(vec![bulk("slave"), bulk("h"), Value::Int(1)]))));
        assert!(is_master(&Err(::redis::RedisError::from((::redis::ErrorKind::Client, "NOPERM")))));
    }
}

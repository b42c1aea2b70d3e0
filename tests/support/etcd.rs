//! A real etcd (3.4, Debian's `etcd-server`) on 127.0.0.1 for the `--watch` tests: a
//! one-member cluster, a [`Daemon`] with its data in its temp folder. Its gRPC gateway serves the v3 API as JSON at `/v3/` (keys and values in base64).
//!
//! Tests that need it call [`Etcd::start`], which returns `None` (after one loud `SKIPPED` line)
//! when etcd is not installed, unless `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.
//! [`Etcd::with_client_cert_auth`] serves over TLS and takes only clients with a certificate
//! its CA signed, as a Kubernetes control plane's etcd does.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};

use super::daemon::Daemon;
use super::nginx::request;

/// How long etcd gets to say it is healthy (it has elected itself leader) after it starts.
const READY_WAIT: Duration = Duration::from_secs(30);

/// A running etcd; killed and waited for on drop, its folder removed.
pub struct Etcd {
    daemon: Daemon,
    /// Serving `https://`, with client certificate auth.
    tls: bool,
}

impl Etcd {
    pub fn start() -> Option<Etcd> {
        Etcd::start_with(None)
    }

    /// etcd over TLS with `--client-cert-auth`, on the certificates `support::certs::make`
    /// made in `certs` (its server's is `leaf.pem`, its CA `ca.pem`). It is ready when it
    /// accepts connections; whether it is healthy yet, the test asks (with `poll`).
    pub fn with_client_cert_auth(certs: &Path) -> Option<Etcd> {
        Etcd::start_with(Some(certs))
    }

    fn start_with(certs: Option<&Path>) -> Option<Etcd> {
        if !super::have_tool("etcd", "apt-get install etcd-server") {
            return None;
        }
        let tls = certs.is_some();
        // Its client port, then its peer port.
        let configure = |command: &mut Command, dir: &Path, ports: &[u16]| {
            let scheme = if tls { "https" } else { "http" };
            let client = format!("{scheme}://127.0.0.1:{}", ports[0]);
            let peer = format!("http://127.0.0.1:{}", ports[1]);
            command
                .args(["--name", "default", "--data-dir"])
                .arg(dir.join("data"))
                .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
                .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
                .args(["--initial-cluster", &format!("default={peer}")]);
            // etcd reads a flag from ETCD_<FLAG> too: none of the tester's may reach it.
            for (name, _) in std::env::vars_os() {
                if name.to_string_lossy().starts_with("ETCD_") {
                    command.env_remove(name);
                }
            }
            if let Some(certs) = certs {
                let file = |name: &str| certs.join(name).display().to_string();
                command.args(["--cert-file", &file("leaf.pem"), "--key-file", &file("leaf.key")]).args([
                    "--trusted-ca-file",
                    &file("ca.pem"),
                    "--client-cert-auth",
                ]);
            }
        };
        // A refused connection panics in `request`: look at the port first.
        let healthy = move |etcd: &Daemon| {
            etcd.accepts(0)
                && (tls || request(etcd.port(0), "GET", "/health", "") == (200, r#"{"health":"true"}"#.to_string()))
        };
        let daemon = Daemon::new("etcd").ports(2).ready_wait(READY_WAIT).start(configure, healthy);
        Some(Etcd { daemon, tls })
    }

    /// `http://127.0.0.1:PORT` and `path` (`https://` with client certificate auth).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.daemon.port(0))
    }

    /// Sets `key` to `value` (`POST /v3/kv/put`); etcd's reply (its `header` holds the new revision).
    pub fn put(&self, key: &str, value: &str) -> Value {
        let body = json!({"key": base64(key), "value": base64(value)}).to_string();
        let (status, reply) = request(self.daemon.port(0), "POST", "/v3/kv/put", &body);
        assert_eq!(status, 200, "put {key}: {reply}\n{}", self.log());
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("put {key}: {e}: {reply}"))
    }

    /// Drops its history before `revision` (`POST /v3/kv/compaction`, physical): a watch that
    /// asks to start earlier is canceled.
    pub fn compact(&self, revision: &Value) {
        let body = json!({"revision": revision, "physical": true}).to_string();
        let (status, reply) = request(self.daemon.port(0), "POST", "/v3/kv/compaction", &body);
        assert_eq!(status, 200, "compact at {revision}: {reply}\n{}", self.log());
    }

    /// Kills it (SIGKILL, as a crash would) and starts it again on the same ports and data: its
    /// keys and revisions are kept. Returns once it is healthy again.
    pub fn restart(&mut self) {
        self.daemon.restart();
    }

    /// What etcd printed so far, for a failing test's message.
    pub fn log(&self) -> String {
        self.daemon.output()
    }
}

/// Standard base64, as the gateway writes keys and values.
pub fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

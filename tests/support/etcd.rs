//! A real etcd (3.4, Debian's `etcd-server`) on 127.0.0.1 for the `--watch` tests: a
//! one-member cluster with its data in a temp folder, in the foreground, stopped by its PID when
//! dropped. Its gRPC gateway serves the v3 API as JSON at `/v3/` (keys and values in base64).
//!
//! Tests that need it call [`Etcd::start`], which returns `None` (after one loud `SKIPPED` line)
//! when etcd is not installed, unless `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.
//! [`Etcd::with_client_cert_auth`] serves over TLS and takes only clients with a certificate
//! its CA signed, as a Kubernetes control plane's etcd does.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

use super::nginx::{free_port, request};

/// How long etcd gets to say it is healthy (it has elected itself leader) after it starts.
const READY_WAIT: Duration = Duration::from_secs(30);
/// Attempts at free ports: another process may take one picked before etcd binds it.
const PORT_TRIES: usize = 5;

/// A running etcd; killed and waited for on drop, its folder removed.
pub struct Etcd {
    child: Child,
    port: u16,
    dir: PathBuf,
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
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            match Etcd::launch(certs) {
                Ok(etcd) => return Some(etcd),
                Err(why) => last = why,
            }
        }
        panic!("etcd did not start after {PORT_TRIES} tries: {last}");
    }

    fn launch(certs: Option<&Path>) -> Result<Etcd, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("etcd-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let (port, peer_port) = (free_port(), free_port());
        let scheme = if certs.is_some() { "https" } else { "http" };
        let client = format!("{scheme}://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let output = std::fs::File::create(dir.join("output")).map_err(|e| format!("create output file: {e}"))?;
        let errors = output.try_clone().map_err(|e| format!("clone output file: {e}"))?;
        let mut command = Command::new("etcd");
        command
            .args(["--name", "default", "--data-dir"])
            .arg(dir.join("data"))
            .args(["--listen-client-urls", &client, "--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("default={peer}")])
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors);
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
        let child = command.spawn().map_err(|e| format!("spawn etcd: {e}"))?;
        // From here on, Drop stops it whatever happens.
        let mut etcd = Etcd { child, port, dir, tls: certs.is_some() };
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if let Ok(Some(status)) = etcd.child.try_wait() {
                return Err(format!("etcd exited with {status}: {}", etcd.log()));
            }
            // A refused connection panics in `request`: look at the port first.
            let accepts = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            if accepts && (etcd.tls || request(port, "GET", "/health", "") == (200, r#"{"health":"true"}"#.to_string()))
            {
                return Ok(etcd);
            }
            if Instant::now() > deadline {
                return Err(format!("etcd not healthy on port {port} after {READY_WAIT:?}: {}", etcd.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:PORT` and `path` (`https://` with client certificate auth).
    pub fn url(&self, path: &str) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}{path}", self.port)
    }

    /// Sets `key` to `value` (`POST /v3/kv/put`); etcd's reply (its `header` holds the new revision).
    pub fn put(&self, key: &str, value: &str) -> Value {
        let body = json!({"key": base64(key), "value": base64(value)}).to_string();
        let (status, reply) = request(self.port, "POST", "/v3/kv/put", &body);
        assert_eq!(status, 200, "put {key}: {reply}\n{}", self.log());
        serde_json::from_str(&reply).unwrap_or_else(|e| panic!("put {key}: {e}: {reply}"))
    }

    /// What etcd printed so far, for a failing test's message.
    pub fn log(&self) -> String {
        read(&self.dir.join("output"))
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Standard base64, as the gateway writes keys and values.
pub fn base64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

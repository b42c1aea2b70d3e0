//! A real tinyproxy on 127.0.0.1 for the proxy tests: its own config in a temp
//! folder, started in the foreground (`-d`), stopped by its PID when dropped.
//!
//! Tests that need it call [`Tinyproxy::start`], which returns `None` (after one
//! loud `SKIPPED` line) when tinyproxy is not installed, unless
//! `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long tinyproxy gets to accept connections after it starts.
const READY_WAIT: Duration = Duration::from_secs(10);
/// Attempts at a free port: another process may take the one picked before tinyproxy binds it.
const PORT_TRIES: usize = 5;

/// A running tinyproxy; killed and waited for on drop, its folder removed.
pub struct Tinyproxy {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Tinyproxy {
    /// tinyproxy with `ConnectPort 443` (so `CONNECT` to any other port gets 403) and, with
    /// `auth` = `Some((user, pass))`, `BasicAuth user pass` (anything else gets 407).
    pub fn start(auth: Option<(&str, &str)>) -> Option<Tinyproxy> {
        Tinyproxy::start_with(auth, 443)
    }

    /// tinyproxy with `ConnectPort {port}`: a `CONNECT` tunnel to a test's server on that port.
    pub fn tunnelling_to(port: u16) -> Option<Tinyproxy> {
        Tinyproxy::start_with(None, port)
    }

    fn start_with(auth: Option<(&str, &str)>, connect_port: u16) -> Option<Tinyproxy> {
        if !super::have_tool("tinyproxy", "apt-get install tinyproxy") {
            return None;
        }
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            match Tinyproxy::launch(auth, connect_port) {
                Ok(proxy) => return Some(proxy),
                Err(why) => last = why,
            }
        }
        panic!("tinyproxy did not start after {PORT_TRIES} tries: {last}");
    }

    fn launch(auth: Option<(&str, &str)>, connect_port: u16) -> Result<Tinyproxy, String> {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("tinyproxy-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let port = free_port();
        let mut config = format!(
            "Port {port}\nListen 127.0.0.1\nAllow 127.0.0.1\nConnectPort {connect_port}\nLogLevel Connect\n\
             LogFile \"{}\"\nPidFile \"{}\"\nTimeout 30\n",
            dir.join("tinyproxy.log").display(),
            dir.join("tinyproxy.pid").display()
        );
        if let Some((user, pass)) = auth {
            config.push_str(&format!("BasicAuth {user} {pass}\n"));
        }
        let config_path = dir.join("tinyproxy.conf");
        std::fs::write(&config_path, config).map_err(|e| format!("write {}: {e}", config_path.display()))?;
        let output = std::fs::File::create(dir.join("output")).map_err(|e| format!("create output file: {e}"))?;
        let errors = output.try_clone().map_err(|e| format!("clone output file: {e}"))?;
        let child = Command::new("tinyproxy")
            .arg("-d")
            .arg("-c")
            .arg(&config_path)
            .stdin(Stdio::null())
            .stdout(output)
            .stderr(errors)
            .spawn()
            .map_err(|e| format!("spawn tinyproxy: {e}"))?;
        // From here on, Drop stops it whatever happens.
        let mut proxy = Tinyproxy { child, port, dir };
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if let Ok(Some(status)) = proxy.child.try_wait() {
                return Err(format!("tinyproxy exited with {status}: {}", read(&proxy.dir.join("output"))));
            }
            if TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_ok() {
                return Ok(proxy);
            }
            if Instant::now() > deadline {
                return Err(format!("tinyproxy not accepting on port {port} after {READY_WAIT:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:PORT`, or with `user:pass@` before the address.
    pub fn url(&self, credentials: Option<&str>) -> String {
        match credentials {
            Some(credentials) => format!("http://{credentials}@127.0.0.1:{}", self.port),
            None => format!("http://127.0.0.1:{}", self.port),
        }
    }

    /// Everything tinyproxy logged so far.
    pub fn log(&self) -> String {
        read(&self.dir.join("tinyproxy.log"))
    }

    /// The request lines it logged (`Request (file descriptor N): GET http://... HTTP/1.1`), in order.
    pub fn requests(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|line| line.split_once("]: Request (file descriptor ")?.1.split_once("): "))
            .map(|(_, request)| request.to_string())
            .collect()
    }
}

impl Drop for Tinyproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port that was free a moment ago.
fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

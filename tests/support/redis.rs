//! A real redis-server for the `--state redis://` tests: one per test, on a
//! free loopback port and a unix socket in a temp folder, in the foreground,
//! stopped by its PID when dropped (also when the test fails).
//!
//! Tests that need it call [`Redis::start`] (or a variant), which returns
//! `None` (after one loud `SKIPPED` line) when redis-server is not
//! installed, unless `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long redis-server gets to accept connections after it starts.
const READY_WAIT: Duration = Duration::from_secs(10);
/// Attempts at a free port: another process may take the one picked before redis-server binds it.
const PORT_TRIES: usize = 5;

/// How the server is reached.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listen {
    Plain,
    /// TLS only on the TCP port (the unix socket stays plain, for the test's own queries).
    Tls,
}

/// A running redis-server; killed and waited for on drop, its folder removed.
pub struct Redis {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
    listen: Listen,
    password: Option<String>,
    extra: Vec<String>,
}

impl Redis {
    /// A plain server on 127.0.0.1 and a unix socket.
    pub fn start() -> Option<Redis> {
        Redis::start_with(Listen::Plain, None, &[])
    }

    /// A plain server with more flags, e.g. `["--timeout", "1"]`.
    pub fn with_args(args: &[&str]) -> Option<Redis> {
        Redis::start_with(Listen::Plain, None, &args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    /// A server that wants `password` (`--requirepass`).
    pub fn with_password(password: &str) -> Option<Redis> {
        Redis::start_with(Listen::Plain, Some(password), &[])
    }

    /// A server that speaks TLS on its port with `cert`/`key` (signed by `ca`), and
    /// does not ask for client certificates.
    pub fn with_tls(cert: &Path, key: &Path, ca: &Path) -> Option<Redis> {
        let files = [("--tls-cert-file", cert), ("--tls-key-file", key), ("--tls-ca-cert-file", ca)];
        let args: Vec<String> =
            files.iter().flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()]).collect();
        Redis::start_with(Listen::Tls, None, &args)
    }

    fn start_with(listen: Listen, password: Option<&str>, extra: &[String]) -> Option<Redis> {
        if !super::have_tool("redis-server", "apt-get install redis-server") {
            return None;
        }
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            let n = NEXT.fetch_add(1, Ordering::SeqCst);
            // A short path: a unix socket's path may hold at most 107 bytes.
            let dir = std::env::temp_dir().join(format!("poll-redis-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
            // From here on, Drop stops it whatever happens.
            let mut redis = Redis {
                child: None,
                port: free_port(),
                dir,
                listen,
                password: password.map(str::to_string),
                extra: extra.to_vec(),
            };
            match redis.launch() {
                Ok(()) => return Some(redis),
                Err(why) => last = why,
            }
        }
        panic!("redis-server did not start after {PORT_TRIES} tries: {last}");
    }

    /// Starts redis-server on this port and socket and waits until both accept.
    fn launch(&mut self) -> Result<(), String> {
        let mut cmd = Command::new("redis-server");
        cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"])
            .arg(&self.dir)
            .arg("--unixsocket")
            .arg(self.socket())
            .arg("--logfile")
            .arg(self.dir.join("redis.log"));
        let port = self.port.to_string();
        match self.listen {
            Listen::Plain => cmd.args(["--port", &port]),
            Listen::Tls => cmd.args(["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no"]),
        };
        if let Some(password) = &self.password {
            cmd.args(["--requirepass", password]);
        }
        let child = cmd
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("spawn redis-server: {e}"))?;
        self.child = Some(child);
        let deadline = Instant::now() + READY_WAIT;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("redis-server exited with {status}: {}", self.log()));
            }
            let tcp = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_ok();
            if tcp && UnixStream::connect(self.socket()).is_ok() {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("redis-server not accepting on port {} after {READY_WAIT:?}", self.port));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Starts it again after [`Redis::kill`], on the same port and socket, empty.
    pub fn restart(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.socket());
        self.launch().unwrap_or_else(|why| panic!("redis-server did not start again: {why}"));
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis://USER_AND_PASSWORD@127.0.0.1:PORT`, e.g. `:pw` or `default:pw`.
    pub fn url_with(&self, userinfo: &str) -> String {
        format!("redis://{userinfo}@127.0.0.1:{}", self.port)
    }

    /// `rediss://127.0.0.1:PORT`.
    pub fn tls_url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port)
    }

    /// `redis+unix:///PATH`.
    pub fn unix_url(&self) -> String {
        format!("redis+unix://{}", self.socket().display())
    }

    /// A connection of the test's own, over the unix socket.
    pub fn connection(&self) -> redis::Connection {
        let mut url = format!("redis+unix://{}", self.socket().display());
        if let Some(password) = &self.password {
            url.push_str(&format!("?pass={password}"));
        }
        redis::Client::open(url.as_str()).and_then(|client| client.get_connection()).expect("connect to redis-server")
    }

    /// Runs one command, e.g. `query(&["PTTL", key])`.
    pub fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        cmd.query(&mut self.connection()).unwrap_or_else(|e| panic!("redis {args:?}: {e}"))
    }

    /// Every key, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.query(&["KEYS", "*"]);
        keys.sort();
        keys
    }

    /// Stops the server now (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server's process in its tracks (SIGSTOP), as a partition
    /// looks to a client: connections are accepted by the kernel, nothing answers.
    pub fn stall(&self) {
        self.signal("-STOP");
    }

    /// Lets a stalled server go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, which: &str) {
        let pid = self.child.as_ref().map(Child::id).expect("redis-server is running");
        let status = Command::new("kill").args([which, &pid.to_string()]).status().expect("run kill");
        assert!(status.success(), "kill {which} {pid}");
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        // A stalled server would not die of SIGKILL any later, but say so in any case.
        if self.child.is_some() {
            self.resume();
        }
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The Redis key of `part` (`rate`, `breaker`, ...) of the state kept under
/// `key`: `poll:{KEY}:PART`, one hash tag per state key.
pub fn state_key(key: &str, part: &str) -> String {
    format!("poll:{{{key}}}:{part}")
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

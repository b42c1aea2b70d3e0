//! The real servers the tests start (redis-server, nginx, etcd, tinyproxy), as cargo's test
//! support keeps its process helpers in one place: each on free loopback ports and in a temp
//! folder of its own, in the foreground, its output kept there for a failure's message; killed
//! by its PID, reaped and its folder removed when dropped (also when the test fails).
//!
//! Also compiled into the crate's own unit tests (`src/state/test_support.rs`), with `redis.rs`
//! beside it: so std only.

use std::fs::File;
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Attempts at free ports: another process may take one picked before the daemon binds it.
const PORT_TRIES: usize = 5;
/// How long a daemon gets to be ready, unless [`Launch::ready_wait`] says otherwise.
const READY_WAIT: Duration = Duration::from_secs(10);
/// The file of the daemon's folder that takes its stdout and stderr.
const OUTPUT: &str = "output";

/// Whether a started daemon is ready yet (it accepts, it answers a health check).
type Ready = Arc<dyn Fn(&Daemon) -> bool + Send + Sync>;

/// A loopback port that was free a moment ago (bound, then let go): for a server of the test's
/// own, or for a URL nothing listens on.
pub fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `n` different loopback ports that were free a moment ago: all bound at once, then let go.
fn free_ports(n: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> =
        (0..n).map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0")).collect();
    listeners.iter().map(|listener| listener.local_addr().expect("local_addr").port()).collect()
}

/// How to start one daemon: [`Daemon::new`], then its ports, its wait and its logs, then
/// [`Launch::start`].
pub struct Launch {
    program: String,
    ports: usize,
    ready_wait: Duration,
    logs: Vec<String>,
}

impl Launch {
    /// How many free ports it is handed (one unless said).
    pub fn ports(mut self, n: usize) -> Launch {
        self.ports = n;
        self
    }

    /// How long it gets to be ready after it starts (10 s unless said).
    pub fn ready_wait(mut self, wait: Duration) -> Launch {
        self.ready_wait = wait;
        self
    }

    /// The files it writes in its folder (a log) that a failure's message shows after its output.
    pub fn logs(mut self, names: &[&str]) -> Launch {
        self.logs = names.iter().map(|name| name.to_string()).collect();
        self
    }

    /// Starts the program in a new folder on new free ports, with the arguments `configure`
    /// gives it for that folder and those ports (it may write files there, such as a config),
    /// and waits until `ready` holds: the port of a free port taken by another process in the
    /// meantime, or any other failed start, makes it try again, up to five times, then panic
    /// with what the program said.
    pub fn start(
        self,
        mut configure: impl FnMut(&mut Command, &Path, &[u16]),
        ready: impl Fn(&Daemon) -> bool + Send + Sync + 'static,
    ) -> Daemon {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let ready: Ready = Arc::new(ready);
        let mut last = String::new();
        for _ in 0..PORT_TRIES {
            let n = NEXT.fetch_add(1, Ordering::SeqCst);
            // A short path: a unix socket's path (redis-server's) may hold at most 107 bytes.
            let dir = std::env::temp_dir().join(format!("poll-{}-{}-{n}", self.program, std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
            let ports = free_ports(self.ports);
            let mut command = Command::new(&self.program);
            configure(&mut command, &dir, &ports);
            // From here on, Drop stops it and removes its folder whatever happens.
            let mut daemon = Daemon {
                command,
                ready: Arc::clone(&ready),
                ready_wait: self.ready_wait,
                logs: self.logs.clone(),
                child: None,
                ports,
                dir,
            };
            match daemon.launch() {
                Ok(()) => return daemon,
                Err(why) => last = why,
            }
        }
        panic!("{} did not start after {PORT_TRIES} tries: {last}", self.program);
    }
}

/// A running daemon: a process of the test's, killed and reaped on drop, its folder removed.
pub struct Daemon {
    /// What started it, kept to start it again ([`Daemon::restart`]).
    command: Command,
    ready: Ready,
    ready_wait: Duration,
    logs: Vec<String>,
    /// `None` once killed.
    child: Option<Child>,
    ports: Vec<u16>,
    dir: PathBuf,
}

impl Daemon {
    /// A daemon that runs `program` (found on `PATH`).
    #[expect(clippy::new_ret_no_self, reason = "a builder: Daemon::new(PROGRAM).ports(2).start(...)")]
    pub fn new(program: &str) -> Launch {
        Launch { program: program.to_string(), ports: 1, ready_wait: READY_WAIT, logs: Vec::new() }
    }

    /// Spawns the command, its output into the folder's `output`, and waits until it is ready;
    /// why not, with what it said, if it exits first or is not ready in time.
    fn launch(&mut self) -> Result<(), String> {
        let path = self.dir.join(OUTPUT);
        let output = File::options().create(true).append(true).open(&path);
        let output = output.map_err(|e| format!("open {}: {e}", path.display()))?;
        let errors = output.try_clone().map_err(|e| format!("clone {}: {e}", path.display()))?;
        self.command.stdin(Stdio::null()).stdout(output).stderr(errors);
        let child = self.command.spawn().map_err(|e| format!("spawn {:?}: {e}", self.command))?;
        self.child = Some(child);
        let deadline = Instant::now() + self.ready_wait;
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("{:?} exited with {status}: {}", self.command, self.said()));
            }
            if (self.ready)(self) {
                return Ok(());
            }
            if Instant::now() > deadline {
                let (wait, ports) = (self.ready_wait, &self.ports);
                return Err(format!("{:?} not ready on {ports:?} after {wait:?}: {}", self.command, self.said()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Its output and its logs, for a failure's message.
    fn said(&self) -> String {
        let mut said = self.output();
        for name in &self.logs {
            said.push_str(&format!("\n{name}:\n{}", self.read(name)));
        }
        said
    }

    /// Its port `i` (in the order given to `configure`).
    pub fn port(&self, i: usize) -> u16 {
        self.ports[i]
    }

    /// Whether its port `i` accepts a connection now.
    pub fn accepts(&self, i: usize) -> bool {
        TcpStream::connect((Ipv4Addr::LOCALHOST, self.ports[i])).is_ok()
    }

    /// Whether every port of it accepts a connection now: the readiness of most daemons.
    pub fn accepting(&self) -> bool {
        (0..self.ports.len()).all(|i| self.accepts(i))
    }

    /// Its folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The text of the file `name` of its folder (empty when there is none).
    pub fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    /// What it printed so far, on stdout and stderr.
    pub fn output(&self) -> String {
        self.read(OUTPUT)
    }

    /// Whether it runs (it was not killed).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Sends it `signal` by its PID (`kill -STOP PID`); panics when it is not running.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().map(Child::id).expect("the daemon is running");
        let status = Command::new("kill").args([signal, &pid.to_string()]).status().expect("run kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// Stops it now (SIGKILL), as a crash would, and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again (after [`Daemon::kill`], or killing it first) with the same command,
    /// ports and folder, and waits until it is ready.
    pub fn restart(&mut self) {
        self.kill();
        self.launch().unwrap_or_else(|why| panic!("{:?} did not start again: {why}", self.command));
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

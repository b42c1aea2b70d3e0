//! A real redis-server for the `--state redis://` tests: one per test, a
//! [`Daemon`] on a free loopback port and a unix socket in its temp folder;
//! also a three-master [`Cluster`] and a [`SentinelGroup`] made of them.
//!
//! Tests that need it call [`Redis::start`] (or a variant), which returns
//! `None` (after one loud `SKIPPED` line) when redis-server is not
//! installed, unless `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::daemon::Daemon;
// The free port of every daemon, here too for the tests that name it by this path.
#[allow(unused_imports, reason = "the crate's unit tests, which compile this file too, want no free port")]
pub use super::daemon::free_port;

/// The unix socket in the server's folder.
const SOCKET: &str = "redis.sock";
/// Its log file there.
const LOG: &str = "redis.log";

/// How the server is reached.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listen {
    Plain,
    /// TLS only on the TCP port (the unix socket stays plain, for the test's own queries).
    Tls,
}

/// A running redis-server; killed and waited for on drop, its folder removed.
pub struct Redis {
    daemon: Daemon,
    listen: Listen,
    password: Option<String>,
}

impl Redis {
    /// A plain server on 127.0.0.1 and a unix socket.
    pub fn start() -> Option<Redis> {
        Redis::start_with(Listen::Plain, None, &[], false)
    }

    /// A plain server with more flags, e.g. `["--timeout", "1"]`.
    pub fn with_args(args: &[&str]) -> Option<Redis> {
        Redis::start_with(Listen::Plain, None, &args.iter().map(|a| a.to_string()).collect::<Vec<_>>(), false)
    }

    /// A server that wants `password` (`--requirepass`).
    pub fn with_password(password: &str) -> Option<Redis> {
        Redis::start_with(Listen::Plain, Some(password), &[], false)
    }

    /// A server that speaks TLS on its port with `cert`/`key` (signed by `ca`), and
    /// does not ask for client certificates.
    pub fn with_tls(cert: &Path, key: &Path, ca: &Path) -> Option<Redis> {
        let files = [("--tls-cert-file", cert), ("--tls-key-file", key), ("--tls-ca-cert-file", ca)];
        let args: Vec<String> =
            files.iter().flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()]).collect();
        Redis::start_with(Listen::Tls, None, &args, false)
    }

    /// As [`Redis::with_tls`], and it takes only clients with a certificate `ca` signed
    /// (`--tls-auth-clients yes`).
    pub fn with_client_auth(cert: &Path, key: &Path, ca: &Path) -> Option<Redis> {
        let files = [("--tls-cert-file", cert), ("--tls-key-file", key), ("--tls-ca-cert-file", ca)];
        let mut args: Vec<String> =
            files.iter().flat_map(|(flag, path)| [flag.to_string(), path.display().to_string()]).collect();
        // After the `no` of `start_with`: the last one given wins.
        args.extend(["--tls-auth-clients".to_string(), "yes".to_string()]);
        Redis::start_with(Listen::Tls, None, &args, false)
    }

    /// redis-server on a free port and a unix socket in its folder, with `extra` flags last;
    /// with `bus`, a second free port is its cluster bus (`--cluster-port`: the port plus 10,000
    /// unless given, past 65,535 for a free port above 55,535). Ready when both accept.
    fn start_with(listen: Listen, password: Option<&str>, extra: &[String], bus: bool) -> Option<Redis> {
        if !super::have_tool("redis-server", "apt-get install redis-server") {
            return None;
        }
        let configure = |cmd: &mut Command, dir: &Path, ports: &[u16]| {
            cmd.args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir"])
                .arg(dir)
                .arg("--unixsocket")
                .arg(dir.join(SOCKET))
                .arg("--logfile")
                .arg(dir.join(LOG));
            let port = ports[0].to_string();
            match listen {
                Listen::Plain => cmd.args(["--port", &port]),
                Listen::Tls => cmd.args(["--port", "0", "--tls-port", &port, "--tls-auth-clients", "no"]),
            };
            if let Some(password) = password {
                cmd.args(["--requirepass", password]);
            }
            cmd.args(extra);
            if bus {
                cmd.args(["--cluster-port", &ports[1].to_string()]);
            }
        };
        let ready = |daemon: &Daemon| daemon.accepts(0) && socket_ready(&daemon.dir().join(SOCKET));
        let daemon = Daemon::new("redis-server").ports(1 + usize::from(bus)).logs(&[LOG]).start(configure, ready);
        Some(Redis { daemon, listen, password: password.map(str::to_string) })
    }

    /// Starts it again after [`Redis::kill`], on the same port and socket, empty.
    pub fn restart(&mut self) {
        self.kill();
        let _ = std::fs::remove_file(self.socket());
        self.daemon.restart();
    }

    pub fn port(&self) -> u16 {
        self.daemon.port(0)
    }

    pub fn socket(&self) -> PathBuf {
        self.daemon.dir().join(SOCKET)
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port())
    }

    /// `redis://USER_AND_PASSWORD@127.0.0.1:PORT`, e.g. `:pw` or `default:pw`.
    pub fn url_with(&self, userinfo: &str) -> String {
        format!("redis://{userinfo}@127.0.0.1:{}", self.port())
    }

    /// `rediss://127.0.0.1:PORT`.
    pub fn tls_url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.port())
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
        self.daemon.kill();
    }

    /// Stops the server's process in its tracks (SIGSTOP), as a partition
    /// looks to a client: connections are accepted by the kernel, nothing answers.
    pub fn stall(&self) {
        self.daemon.signal("-STOP");
    }

    /// Lets a stalled server go on (SIGCONT).
    pub fn resume(&self) {
        self.daemon.signal("-CONT");
    }

    /// How often `command` (as `INFO commandstats` names it, e.g. `evalsha`) ran.
    pub fn calls(&self, command: &str) -> u64 {
        let stats: String = self.query(&["INFO", "commandstats"]);
        let line = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .find_map(|l| l.strip_prefix(&line))
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Everything it logged so far.
    pub fn log(&self) -> String {
        self.daemon.read(LOG)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        // A stalled server would not die of SIGKILL any later, but say so in any case (the
        // daemon's own drop kills it).
        if self.daemon.running() {
            self.resume();
        }
    }
}

/// The Redis key of `part` (`rate`, `breaker`, ...) of the state kept under
/// `key`: `poll:{KEY}:PART`, one hash tag per state key.
pub fn state_key(key: &str, part: &str) -> String {
    format!("poll:{{{key}}}:{part}")
}

/// How long a new cluster or Sentinel group gets to agree on its state.
const SETTLE_WAIT: Duration = Duration::from_secs(30);

/// Polls `check` every 20 ms until it holds or `SETTLE_WAIT` passes.
fn settle(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + SETTLE_WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "{what} after {SETTLE_WAIT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A three-master Redis Cluster on free loopback ports, no replicas: three
/// redis-servers with `--cluster-enabled yes`, joined by `redis-cli --cluster
/// create`. Each node is stopped by its PID when the cluster is dropped.
pub struct Cluster {
    nodes: Vec<Redis>,
}

impl Cluster {
    pub fn start() -> Option<Cluster> {
        Cluster::start_with(None, None, 0)
    }

    /// Three masters, each with a replica that takes over when it fails (nodes 3 to 5).
    pub fn with_replicas() -> Option<Cluster> {
        Cluster::start_with(None, None, 1)
    }

    /// Every node wants `password` (`--requirepass`, and `--masterauth` for each other).
    pub fn with_password(password: &str) -> Option<Cluster> {
        Cluster::start_with(Some(password), None, 0)
    }

    /// Every node speaks TLS only, to clients and to each other, with `cert`/`key`
    /// signed by `ca` (the unix sockets stay plain, for the tests' own queries).
    pub fn with_tls(cert: &Path, key: &Path, ca: &Path) -> Option<Cluster> {
        Cluster::start_with(None, Some((cert, key, ca)), 0)
    }

    fn start_with(password: Option<&str>, tls: Option<(&Path, &Path, &Path)>, replicas: usize) -> Option<Cluster> {
        if !super::have_tool("redis-server", "apt-get install redis-server")
            || !super::have_tool("redis-cli", "apt-get install redis-tools")
        {
            return None;
        }
        let mut args: Vec<String> =
            ["--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-config-file", "nodes.conf"]
                .map(str::to_string)
                .to_vec();
        if let Some(password) = password {
            args.extend(["--masterauth".to_string(), password.to_string()]);
        }
        let listen = if let Some((cert, key, ca)) = tls {
            for (flag, path) in [("--tls-cert-file", cert), ("--tls-key-file", key), ("--tls-ca-cert-file", ca)] {
                args.extend([flag.to_string(), path.display().to_string()]);
            }
            args.extend(["--tls-cluster".to_string(), "yes".to_string()]);
            Listen::Tls
        } else {
            Listen::Plain
        };
        let nodes: Vec<Redis> = (0..3 * (1 + replicas))
            .map(|_| Redis::start_with(listen, password, &args, true).expect("redis-server is there"))
            .collect();
        let mut create = Command::new("redis-cli");
        if let Some((_, _, ca)) = tls {
            create.arg("--tls").arg("--cacert").arg(ca);
        }
        if let Some(password) = password {
            create.args(["--no-auth-warning", "-a", password]);
        }
        create.arg("--cluster").arg("create");
        create.args(nodes.iter().map(|node| format!("127.0.0.1:{}", node.port())));
        create
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        // It waits for the nodes to join for as long as it takes: not past SETTLE_WAIT.
        let mut child = create.spawn().expect("run redis-cli");
        let cluster = Cluster { nodes };
        let deadline = Instant::now() + SETTLE_WAIT;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for redis-cli") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("redis-cli --cluster create did not finish in {SETTLE_WAIT:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "redis-cli --cluster create: {status}");
        settle("the cluster is not ok", || {
            cluster.nodes.iter().all(|node| {
                let info: String = node.query(&["CLUSTER", "INFO"]);
                let slots: Vec<redis::Value> = node.query(&["CLUSTER", "SLOTS"]);
                // Each range names its master and its replicas: [first, last, master, replica...].
                let known =
                    slots.iter().all(|range| matches!(range, redis::Value::Array(f) if f.len() == 3 + replicas));
                info.contains("cluster_state:ok") && slots.len() == 3 && known
            })
        });
        Some(cluster)
    }

    /// Kills node `i` (SIGKILL), as a crash would.
    pub fn kill(&mut self, i: usize) {
        self.nodes[i].kill();
    }

    /// A node that is not killed, to ask.
    fn alive(&self) -> &Redis {
        self.nodes.iter().find(|node| node.daemon.running()).expect("a node is up")
    }

    pub fn node(&self, i: usize) -> &Redis {
        &self.nodes[i]
    }

    /// `redis://127.0.0.1:PORT` of node `i` (`rediss://` for a TLS cluster).
    pub fn url(&self, i: usize) -> String {
        match self.nodes[i].listen {
            Listen::Plain => self.nodes[i].url(),
            Listen::Tls => self.nodes[i].tls_url(),
        }
    }

    /// The slot of `key`, as the cluster computes it (`CLUSTER KEYSLOT`).
    pub fn keyslot(&self, key: &str) -> u16 {
        self.nodes[0].query(&["CLUSTER", "KEYSLOT", key])
    }

    /// The node that serves `slot` now, as the first node that is up sees it.
    pub fn owner(&self, slot: u16) -> usize {
        let ranges: Vec<Vec<redis::Value>> = self.alive().query(&["CLUSTER", "SLOTS"]);
        let int = |value: Option<&redis::Value>| match value {
            Some(redis::Value::Int(n)) => *n,
            _ => -1,
        };
        let port = ranges.iter().find_map(|range| {
            let Some(redis::Value::Array(master)) = range.get(2) else { return None };
            (int(range.first())..=int(range.get(1))).contains(&i64::from(slot)).then(|| int(master.get(1)))
        });
        self.nodes.iter().position(|node| Some(i64::from(node.port())) == port).expect("a node serves the slot")
    }

    fn id(&self, i: usize) -> String {
        self.nodes[i].query(&["CLUSTER", "MYID"])
    }

    /// Moves `slot` from node `from` to node `to` as `redis-cli --cluster reshard`
    /// does: IMPORTING and MIGRATING, MIGRATE of its keys, then NODE on every
    /// node. Between MIGRATE and NODE the slot stays half-moved for `hold`, as
    /// a slot with many keys would: clients get ASK and TRYAGAIN meanwhile.
    pub fn migrate(&self, slot: u16, from: usize, to: usize, hold: Duration) {
        let (slot, from_id, to_id) = (slot.to_string(), self.id(from), self.id(to));
        let ok = |node: usize, args: &[&str]| {
            let reply: String = self.nodes[node].query(args);
            assert_eq!(reply, "OK", "{args:?} on node {node}");
        };
        ok(to, &["CLUSTER", "SETSLOT", &slot, "IMPORTING", &from_id]);
        ok(from, &["CLUSTER", "SETSLOT", &slot, "MIGRATING", &to_id]);
        let keys: Vec<String> = self.nodes[from].query(&["CLUSTER", "GETKEYSINSLOT", &slot, "1000"]);
        if !keys.is_empty() {
            let port = self.nodes[to].port().to_string();
            let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000"];
            if let Some(password) = &self.nodes[to].password {
                args.extend(["AUTH", password]);
            }
            args.push("KEYS");
            args.extend(keys.iter().map(String::as_str));
            ok(from, &args);
        }
        std::thread::sleep(hold);
        for node in [to, from].into_iter().chain((0..self.nodes.len()).filter(|n| *n != to && *n != from)) {
            ok(node, &["CLUSTER", "SETSLOT", &slot, "NODE", &to_id]);
        }
    }

    /// Every key on every node, sorted.
    pub fn keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.nodes.iter().flat_map(Redis::keys).collect();
        keys.sort();
        keys
    }

    /// `[node][command] -> calls` from each node's `INFO commandstats`, e.g. `evalsha`.
    pub fn calls(&self, command: &str) -> Vec<u64> {
        self.nodes.iter().map(|node| node.calls(command)).collect()
    }
}

/// A Sentinel group: a master, a replica of it and one Sentinel that watches
/// them under the name [`SentinelGroup::MASTER`], quick to fail over (the master
/// counts as down after 1 s). Each is stopped by its PID when dropped.
pub struct SentinelGroup {
    pub master: Redis,
    pub replica: Redis,
    sentinel: Sentinel,
}

impl SentinelGroup {
    pub const MASTER: &str = "poll-test";

    pub fn start() -> Option<SentinelGroup> {
        SentinelGroup::start_with(None)
    }

    /// The master and the replica want `password`; the Sentinel does not.
    pub fn with_password(password: &str) -> Option<SentinelGroup> {
        SentinelGroup::start_with(Some(password))
    }

    fn start_with(password: Option<&str>) -> Option<SentinelGroup> {
        if !super::have_tool("redis-server", "apt-get install redis-server") {
            return None;
        }
        let master = Redis::start_with(Listen::Plain, password, &[], false).expect("redis-server is there");
        let mut args = vec!["--replicaof".to_string(), "127.0.0.1".to_string(), master.port().to_string()];
        if let Some(password) = password {
            args.extend(["--masterauth".to_string(), password.to_string()]);
        }
        let replica = Redis::start_with(Listen::Plain, password, &args, false).expect("redis-server is there");
        settle("the replica is not in sync", || {
            let info: String = replica.query(&["INFO", "replication"]);
            info.contains("master_link_status:up")
        });
        let sentinel = Sentinel::start(master.port(), password);
        let group = SentinelGroup { master, replica, sentinel };
        settle("the Sentinel does not know the replica", || {
            let replicas: Vec<redis::Value> = group.sentinel.query(&["SENTINEL", "REPLICAS", Self::MASTER]);
            group.master_port() == Some(group.master.port()) && replicas.len() == 1
        });
        Some(group)
    }

    /// `redis+sentinel://127.0.0.1:PORT/poll-test`.
    pub fn url(&self) -> String {
        format!("redis+sentinel://127.0.0.1:{}/{}", self.sentinel.daemon.port(0), Self::MASTER)
    }

    /// `redis+sentinel://USERINFO@127.0.0.1:PORT/poll-test`.
    pub fn url_with(&self, userinfo: &str) -> String {
        format!("redis+sentinel://{userinfo}@127.0.0.1:{}/{}", self.sentinel.daemon.port(0), Self::MASTER)
    }

    pub fn sentinel_port(&self) -> u16 {
        self.sentinel.daemon.port(0)
    }

    /// The port of the master the Sentinel names now.
    pub fn master_port(&self) -> Option<u16> {
        let addr: Option<(String, u16)> = self.sentinel.query(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", Self::MASTER]);
        addr.map(|(_, port)| port)
    }

    /// What the Sentinel logged so far.
    pub fn sentinel_log(&self) -> String {
        self.sentinel.daemon.read("sentinel.log")
    }
}

/// `redis-server CONFIG --sentinel` (Debian's redis-server package runs Sentinel this way).
struct Sentinel {
    daemon: Daemon,
}

impl Sentinel {
    fn start(master_port: u16, password: Option<&str>) -> Sentinel {
        let configure = |cmd: &mut Command, dir: &Path, ports: &[u16]| {
            let name = SentinelGroup::MASTER;
            let mut conf = format!(
                "port {port}\nbind 127.0.0.1\ndir {dir}\nlogfile {dir}/sentinel.log\n\
                 sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds {name} 1000\n\
                 sentinel failover-timeout {name} 2000\n\
                 sentinel parallel-syncs {name} 1\n",
                port = ports[0],
                dir = dir.display()
            );
            if let Some(password) = password {
                conf.push_str(&format!("sentinel auth-pass {name} {password}\n"));
            }
            let file = dir.join("sentinel.conf");
            std::fs::write(&file, conf).expect("write sentinel.conf");
            cmd.arg(&file).arg("--sentinel");
        };
        let daemon = Daemon::new("redis-server").logs(&["sentinel.log"]).start(configure, Daemon::accepting);
        Sentinel { daemon }
    }

    fn query<T: redis::FromRedisValue>(&self, args: &[&str]) -> T {
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        let url = format!("redis://127.0.0.1:{}", self.daemon.port(0));
        let mut connection =
            redis::Client::open(url.as_str()).and_then(|c| c.get_connection()).expect("connect to the Sentinel");
        cmd.query(&mut connection).unwrap_or_else(|e| panic!("sentinel {args:?}: {e}"))
    }
}

/// A CA (`ca.pem`) and a leaf it signed for 127.0.0.1 (`leaf.pem`, `leaf.key`),
/// made with openssl in `folder`:
/// rustls refuses a self-signed certificate used as the server's own.
pub fn certificates(folder: &Path) -> bool {
    if !super::have_tool("openssl", "apt-get install openssl") {
        return false;
    }
    let path = |name: &str| folder.join(name).display().to_string();
    std::fs::write(
        folder.join("leaf.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n\
         subjectAltName=IP:127.0.0.1\n",
    )
    .expect("write leaf.ext");
    let ec = "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2";
    let (ca, ca_key, leaf, leaf_key, csr, ext) =
        (path("ca.pem"), path("ca.key"), path("leaf.pem"), path("leaf.key"), path("leaf.csr"), path("leaf.ext"));
    let steps = [
        format!("req -x509 -new {ec} -keyout {ca_key} -out {ca} -subj /CN=poll-test-CA"),
        format!("req -new {ec} -keyout {leaf_key} -out {csr} -subj /CN=127.0.0.1"),
        format!("x509 -req -in {csr} -CA {ca} -CAkey {ca_key} -CAcreateserial -out {leaf} -days 2 -extfile {ext}"),
    ];
    let ca_extensions =
        ["-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"];
    for (i, step) in steps.iter().enumerate() {
        // The paths are under the target folder: no spaces to split on.
        let mut args: Vec<&str> = step.split(' ').collect();
        if i == 0 {
            args.extend(ca_extensions);
        }
        let out = Command::new("openssl").args(&args).output().expect("run openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    true
}

/// Whether redis-server accepts on its unix socket yet.
#[cfg(unix)]
fn socket_ready(path: &Path) -> bool {
    std::os::unix::net::UnixStream::connect(path).is_ok()
}

/// No unix socket off Unix (nor a redis-server for these tests): the TCP port is enough.
#[cfg(not(unix))]
fn socket_ready(_: &Path) -> bool {
    true
}

/// A redis-server started on a port the test chose, later than the `poll` that waits for it:
/// in the foreground, no persistence; killed and reaped on drop. `None` (after the `SKIPPED`
/// line) without redis-server.
#[cfg(unix)] // The tests of tests/it/ports.rs.
pub struct Late(std::process::Child);

#[cfg(unix)]
impl Late {
    pub fn start(port: u16) -> Option<Late> {
        if !super::have_tool("redis-server", "apt-get install redis-server") {
            return None;
        }
        let port = port.to_string();
        let args = ["--port", &port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"];
        let child = Command::new("redis-server").args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        Some(Late(child.expect("spawn redis-server")))
    }
}

#[cfg(unix)]
impl Drop for Late {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

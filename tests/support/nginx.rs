//! A real nginx on 127.0.0.1: with the nchan module (Debian's `libnginx-mod-nchan`), for the
//! `--watch` tests against a pub/sub server nobody here wrote; over TLS, asking for client
//! certificates ([`Mtls`]), for the mutual TLS tests; and serving static files with `gzip on`
//! ([`Gzip`]), as a stock nginx does. Each is a [`Daemon`] with its own nginx.conf in its temp
//! folder, one process in the foreground (`daemon off; master_process off;`).
//!
//! Tests that need it call [`Nchan::start`], [`Mtls::start`] or [`Gzip::start`], which return `None` (after one
//! loud `SKIPPED` line) when nginx or the module is not installed, unless
//! `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI. [`request`] is the by-hand
//! HTTP/1.0 client of this file and of `etcd.rs`.

use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::daemon::Daemon;

/// How to get nginx and the module, for the `SKIPPED` line or the failure.
const INSTALL: &str = "apt-get install nginx libnginx-mod-nchan";
/// Where distributions put the module (Debian's first; nginx's `load_module` wants a path).
const MODULES: &[&str] = &[
    "/usr/lib/nginx/modules/ngx_nchan_module.so",
    "/usr/lib64/nginx/modules/ngx_nchan_module.so",
    "/usr/share/nginx/modules/ngx_nchan_module.so",
];
/// The bound on each by-hand request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// A running nginx whose channels are named by a URL's last segment (`\w+`):
///
/// - `/pub/CH`: the publisher; a POST publishes its body (and its `Content-Type`) to CH.
/// - `/sse/CH`: an EventSource subscriber (each message an event with an `id:`); it answers only
///   a request that accepts `text/event-stream`, and starts a new subscriber at the oldest message
///   kept, as nchan does by default.
/// - `/brief/CH`: an EventSource subscriber whose stream nchan ends after 1 s
///   (`nchan_subscriber_timeout`) and that starts a new subscriber at the *next* message
///   (`nchan_subscriber_first_message newest`): a message published between two of its streams
///   reaches only a subscriber that comes back with its `Last-Event-ID`.
/// - `/lp/CH`: a long-poll subscriber: one message a reply, the oldest kept to a request without
///   validators; a request with the last reply's `If-None-Match` / `If-Modified-Since` gets the
///   next one, held until it is published.
pub struct Nchan {
    daemon: Daemon,
}

/// What nchan answered a publish.
#[derive(Debug)]
pub struct Published {
    /// 201 when subscribers were waiting on the channel, 202 when the message was only queued.
    pub status: u16,
    /// Its `active subscribers: N` line: subscribers on the channel when the message came.
    pub subscribers: Option<u32>,
}

impl Nchan {
    pub fn start() -> Option<Nchan> {
        if !super::have_tool("nginx", INSTALL) {
            return None;
        }
        let module = module()?;
        Some(Nchan { daemon: start(1, |dir, ports| config_text(module, dir, ports[0])) })
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.daemon.port(0))
    }

    /// POSTs `body` (JSON) to `/pub/CHANNEL`.
    pub fn publish(&self, channel: &str, body: &str) -> Published {
        let (status, text) = request(self.daemon.port(0), "POST", &format!("/pub/{channel}"), body);
        let subscribers = text.lines().find_map(|line| line.strip_prefix("active subscribers: ")?.trim().parse().ok());
        Published { status, subscribers }
    }

    /// How many requests for `path` nginx logged as done (a held one is logged when it ends).
    pub fn requests(&self, path: &str) -> usize {
        let request = format!("\"GET {path} HTTP/");
        self.daemon.read("access.log").lines().filter(|line| line.contains(&request)).count()
    }

    /// nginx's error log so far, for a failing test's message.
    pub fn log(&self) -> String {
        self.daemon.read("error.log")
    }
}

/// A running nginx over TLS with the certificates of `support::certs` (its CA's clients only)
/// on two ports, two origins:
///
/// - The first asks every client for a certificate (`ssl_verify_client on`): a request without
///   one, or with one its CA did not sign, gets nginx's 400. `/who` answers
///   `{"client":"<subject>","verify":"SUCCESS"}`; `/away` redirects (302) to the second
///   origin's `/who`; a POST to `/jobs` answers 202 with `Operation-Location` there too.
/// - The second asks for one but takes a request without (`ssl_verify_client optional`): its
///   `/who` says whether a certificate came (`"verify":"NONE"` when none did).
pub struct Mtls {
    daemon: Daemon,
}

impl Mtls {
    /// nginx with the certificates `support::certs::make` made in `certs`.
    pub fn start(certs: &Path) -> Option<Mtls> {
        if !super::have_tool("nginx", "apt-get install nginx") {
            return None;
        }
        Some(Mtls { daemon: start(2, |dir, ports| mtls_config(dir, certs, ports[0], ports[1])) })
    }

    /// `https://127.0.0.1:PORT` and `path`, on the origin that asks every client for a certificate.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.daemon.port(0))
    }

    /// `https://127.0.0.1:OTHER` and `path`, on the origin where a certificate is optional.
    pub fn other_url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.daemon.port(1))
    }

    /// nginx's error log so far, for a failing test's message.
    pub fn log(&self) -> String {
        self.daemon.read("error.log")
    }
}

/// A running nginx serving the files of its folder `root/` with `gzip on` for JSON of any size
/// (`gzip on; gzip_types application/json; gzip_min_length 1;`, nginx's HTML always), as many a
/// stock nginx is set up: a `.json` file is `application/json` with nginx's `ETag` and
/// `Last-Modified` (weak once gzipped), so a conditional GET gets its 304, and a missing one is
/// nginx's own HTML 404 page. Its access log has one line a request: `METHOD URI STATUS
/// "If-None-Match" "Content-Encoding"`.
pub struct Gzip {
    daemon: Daemon,
}

impl Gzip {
    /// nginx serving `files` (name, text) from its root folder.
    pub fn start(files: &[(&str, &str)]) -> Option<Gzip> {
        if !super::have_tool("nginx", "apt-get install nginx") {
            return None;
        }
        let gzip = Gzip { daemon: start(1, |dir, ports| gzip_config(dir, ports[0])) };
        std::fs::create_dir_all(gzip.daemon.dir().join("root")).expect("create nginx's root folder");
        for (name, text) in files {
            gzip.write(name, text);
        }
        Some(gzip)
    }

    /// `http://127.0.0.1:PORT` and `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.daemon.port(0))
    }

    /// Writes the file `name` of the root folder: nginx serves it from its next request on.
    pub fn write(&self, name: &str, text: &str) {
        let path = self.daemon.dir().join("root").join(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The access log's lines for `uri`, oldest first (`GET /file.json 304 "W/\"...\"" ""`).
    pub fn requests(&self, uri: &str) -> Vec<String> {
        let lines = self.daemon.read("access.log");
        lines.lines().filter(|line| line.split(' ').nth(1) == Some(uri)).map(str::to_string).collect()
    }

    /// nginx's error log so far, for a failing test's message.
    pub fn log(&self) -> String {
        self.daemon.read("error.log")
    }

    /// Stops it now, as a server that goes away mid-wait: its port is refused from then on.
    #[cfg(unix)] // The tests of tests/it/ports.rs.
    pub fn stop(&mut self) {
        self.daemon.kill();
    }
}

/// The files of an nginx that `poll --start` runs itself (`nginx -p DIR -c CONF`, in the
/// foreground with its master and one worker): in `dir`, serving `/health.json` on `port`; with
/// `broken`, a `listen` it refuses, so that it exits at once with status 1. Returns the command
/// line, or `None` (after the `SKIPPED` line) without nginx.
#[cfg(unix)] // The tests of tests/it/start.rs.
pub fn served(dir: &Path, port: u16, broken: bool) -> Option<String> {
    if !super::have_tool("nginx", "apt-get install nginx") {
        return None;
    }
    std::fs::create_dir_all(dir.join("root")).expect("create nginx's root folder");
    std::fs::write(dir.join("root/health.json"), "{\"ok\":true}").expect("write health.json");
    // In the background unless told otherwise, as a stock nginx.conf: `--start` gives `-g 'daemon off;'`.
    let text = gzip_config(dir, port).replace("master_process off;", "master_process on;").replace("daemon off;\n", "");
    let text = if broken {
        text.replace(&format!("listen 127.0.0.1:{port};"), &format!("listen 127.0.0.1:{port} nonsense;"))
    } else {
        text
    };
    let conf = dir.join("nginx.conf");
    std::fs::write(&conf, text).expect("write nginx.conf");
    Some(format!("nginx -p {0} -c {1} -e {0}/error.log", dir.display(), conf.display()))
}

/// nginx on `ports` free ports, with the configuration `config` makes for its folder and those
/// ports, once it accepts on every one of them.
fn start(ports: usize, config: impl Fn(&Path, &[u16]) -> String) -> Daemon {
    let configure = |cmd: &mut Command, dir: &Path, ports: &[u16]| {
        let file = dir.join("nginx.conf");
        std::fs::write(&file, config(dir, ports)).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
        // -p: the prefix of relative paths; -e: the error log of the start, before the config is read.
        cmd.arg("-p").arg(dir).arg("-c").arg(&file).arg("-e").arg(dir.join("error.log"));
    };
    Daemon::new("nginx").ports(ports).logs(&["error.log"]).start(configure, Daemon::accepting)
}

/// The module's file, or `None` after the `SKIPPED` line (a failure with `POLL_TEST_REQUIRE_TOOLS=1`),
/// as `have_tool` does for a program.
fn module() -> Option<&'static Path> {
    if let Some(found) = MODULES.iter().map(Path::new).find(|path| path.is_file()) {
        return Some(found);
    }
    let require = super::tool::REQUIRE_TOOLS;
    assert!(
        std::env::var_os(require).is_none_or(|v| v != "1"),
        "nginx's nchan module is required ({require}=1), in none of {MODULES:?}: {INSTALL}"
    );
    let test = std::thread::current().name().map(|t| format!("{t}: ")).unwrap_or_default();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {test}nginx's nchan module is not installed; {INSTALL} (set {require}=1 to make this a failure)"
    );
    None
}

/// One process, in the foreground, every file it writes in `dir`, listening on loopback only.
fn config_text(module: &Path, dir: &Path, port: u16) -> String {
    let dir = dir.display();
    format!(
        r#"load_module {module};
daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location ~ /pub/(\w+)$ {{ nchan_publisher; nchan_channel_id $1; }}
        location ~ /sse/(\w+)$ {{ nchan_subscriber eventsource; nchan_channel_id $1; }}
        location ~ /brief/(\w+)$ {{
            nchan_subscriber eventsource;
            nchan_channel_id $1;
            nchan_subscriber_timeout 1s;
            nchan_subscriber_first_message newest;
        }}
        location ~ /lp/(\w+)$ {{ nchan_subscriber longpoll; nchan_channel_id $1; }}
    }}
}}
"#,
        module = module.display()
    )
}

/// [`Mtls`]'s two servers, every file in `dir` but the certificates (in `certs`).
fn mtls_config(dir: &Path, certs: &Path, port: u16, other: u16) -> String {
    let (dir, certs) = (dir.display(), certs.display());
    let tls = format!(
        "ssl_certificate {certs}/leaf.pem; ssl_certificate_key {certs}/leaf.key; \
         ssl_client_certificate {certs}/ca.pem; ssl_verify_depth 2; default_type application/json;"
    );
    let who = r#"location = /who { return 200 '{"client":"$ssl_client_s_dn","verify":"$ssl_client_verify"}'; }"#;
    format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        {tls}
        ssl_verify_client on;
        {who}
        location = /away {{ return 302 https://127.0.0.1:{other}/who; }}
        location = /jobs {{
            add_header Operation-Location https://127.0.0.1:{other}/who always;
            return 202 '{{"status":"running"}}';
        }}
    }}
    server {{
        listen 127.0.0.1:{other} ssl;
        {tls}
        ssl_verify_client optional;
        {who}
    }}
}}
"#
    )
}

/// [`Gzip`]'s server: static files from `dir/root`, every other file in `dir`.
fn gzip_config(dir: &Path, port: u16) -> String {
    let dir = dir.display();
    format!(
        r#"daemon off;
master_process off;
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events {{ worker_connections 64; }}
http {{
    log_format probe '$request_method $uri $status "$http_if_none_match" "$sent_http_content_encoding"';
    access_log {dir}/access.log probe;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    types {{ application/json json; text/html html; }}
    default_type application/octet-stream;
    gzip on;
    gzip_types application/json;
    gzip_min_length 1;
    server {{
        listen 127.0.0.1:{port};
        root {dir}/root;
    }}
}}
"#
    )
}

/// `METHOD PATH` to 127.0.0.1:`port`, with `json` as an `application/json` body unless it is
/// empty: the status and the body. HTTP/1.0, so that the reply has no chunks and ends with the
/// connection.
pub fn request(port: u16, method: &str, path: &str, json: &str) -> (u16, String) {
    let what = format!("{method} {path} on port {port}");
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).unwrap_or_else(|e| panic!("{what}: {e}"));
    stream.set_read_timeout(Some(REQUEST_TIMEOUT)).expect("set_read_timeout");
    stream.set_write_timeout(Some(REQUEST_TIMEOUT)).expect("set_write_timeout");
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n");
    if !json.is_empty() {
        head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n", json.len()));
    }
    head.push_str("\r\n");
    stream.write_all(format!("{head}{json}").as_bytes()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut reply = String::new();
    stream.read_to_string(&mut reply).unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = reply.split(' ').nth(1).and_then(|code| code.parse().ok());
    let status = status.unwrap_or_else(|| panic!("{what}: no status line in {reply:?}"));
    let body = reply.split_once("\r\n\r\n").map_or("", |(_, body)| body);
    (status, body.to_string())
}

//! A real tinyproxy on 127.0.0.1 for the proxy tests: a [`Daemon`] with its own
//! config in its temp folder, in the foreground (`-d`).
//!
//! Tests that need it call [`Tinyproxy::start`], which returns `None` (after one
//! loud `SKIPPED` line) when tinyproxy is not installed, unless
//! `POLL_TEST_REQUIRE_TOOLS=1` makes that a failure, as in CI.

use std::path::Path;
use std::process::Command;

use super::daemon::Daemon;

/// Its log file, in its folder.
const LOG: &str = "tinyproxy.log";

/// A running tinyproxy; killed and waited for on drop, its folder removed.
pub struct Tinyproxy {
    daemon: Daemon,
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
        let configure = |cmd: &mut Command, dir: &Path, ports: &[u16]| {
            let mut config = format!(
                "Port {}\nListen 127.0.0.1\nAllow 127.0.0.1\nConnectPort {connect_port}\nLogLevel Connect\n\
                 LogFile \"{}\"\nPidFile \"{}\"\nTimeout 30\n",
                ports[0],
                dir.join(LOG).display(),
                dir.join("tinyproxy.pid").display()
            );
            if let Some((user, pass)) = auth {
                config.push_str(&format!("BasicAuth {user} {pass}\n"));
            }
            let file = dir.join("tinyproxy.conf");
            std::fs::write(&file, config).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
            cmd.arg("-d").arg("-c").arg(&file);
        };
        let daemon = Daemon::new("tinyproxy").logs(&[LOG]).start(configure, Daemon::accepting);
        Some(Tinyproxy { daemon })
    }

    /// `http://127.0.0.1:PORT`, or with `user:pass@` before the address.
    pub fn url(&self, credentials: Option<&str>) -> String {
        match credentials {
            Some(credentials) => format!("http://{credentials}@127.0.0.1:{}", self.daemon.port(0)),
            None => format!("http://127.0.0.1:{}", self.daemon.port(0)),
        }
    }

    /// Everything tinyproxy logged so far.
    pub fn log(&self) -> String {
        self.daemon.read(LOG)
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

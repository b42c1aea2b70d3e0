//! A stateful job server for the benchmarks, on 127.0.0.1 only: keep-alive
//! HTTP/1.1, one thread per connection, answers from prebuilt bytes so that it
//! is never the bottleneck (`wrk -t1 -c1` measures its one-connection limit).
//!
//!     cargo run --release --example jobserver -- [PORT] [--unix PATH]
//!
//! With `--unix PATH` it also serves the same routes on a Unix socket at PATH
//! (for `poll --unix-socket`, as docs/guide/ci.md shows).
//!
//! Routes:
//!   GET /job          {"status":"pending","n":N} until N reaches the target, then {"status":"done","n":N}
//!   GET /reset?n=K    set the target to K polls and the counter to 0
//!   GET /ok           a fixed small JSON body
//!   GET /stats        {"connections":C,"requests":R}
//!   GET /hang         answers only after 60 s (a request in flight, for the signal benchmark)
//!   POST /app/installations/ID/access_tokens[?ttl=S]
//!                     a new token, as GitHub's API makes an App installation token:
//!                     201 {"token":"ghs_...","expires_at":"RFC 3339"}, valid for S seconds (default:
//!                     $JOBSERVER_TOKEN_TTL, else 3600)
//!   GET /private/job  as /job, but only with `Authorization: Bearer T` for a token made above
//!                     and not expired; 401 otherwise (counted in /stats as "refused")
//!   GET /containers/db/json   Docker's container inspect: State.Health.Status "starting" until the
//!                     /job counter reaches its target, then "healthy" (/containers/bad/json: "unhealthy")
//!   Azure Resource Manager's shapes (docs/guide/submit.md), each operation done after two status polls:
//!   PUT  /subscriptions/s1/resourceGroups/rg/providers/Microsoft.Resources/deployments/NAME
//!                     201 Accepted + Azure-AsyncOperation (.../operations/NAME: {"status":"Running"},
//!                     then "Succeeded"); a GET of the deployment then has its outputs
//!   PUT  .../providers/Microsoft.Storage/storageAccounts/NAME
//!                     201 {"properties":{"provisioningState":"Creating"}} and no header: body polling
//!   DELETE .../providers/Microsoft.Storage/storageAccounts/NAME
//!                     202 + Location (.../operationResults/NAME: 202, then 204)
//!   anything else     404

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

#[derive(Default)]
struct Counters {
    polls: AtomicU64,
    target: AtomicU64,
    connections: AtomicU64,
    requests: AtomicU64,
    refused: AtomicU64,
    /// Tokens made by the access_tokens route, with when they expire.
    tokens: Mutex<Vec<(String, SystemTime)>>,
    /// ARM operations by resource name: how many times each was polled.
    arm: Mutex<HashMap<String, u64>>,
}

/// Status polls after which an ARM operation is done.
const ARM_POLLS: u64 = 2;

fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    let listener = match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!("jobserver: cannot listen on 127.0.0.1:{port}: {e}");
            std::process::exit(1);
        }
    };
    if let Ok(addr) = listener.local_addr() {
        // The bench script reads the port from this line.
        println!("listening on {addr}");
    }
    let counters = Arc::new(Counters::default());
    let args: Vec<String> = std::env::args().collect();
    if let Some(path) = args.iter().position(|a| a == "--unix").and_then(|i| args.get(i + 1)) {
        let _ = std::fs::remove_file(path);
        let unix = match UnixListener::bind(path) {
            Ok(unix) => unix,
            Err(e) => {
                eprintln!("jobserver: cannot listen on {path}: {e}");
                std::process::exit(1);
            }
        };
        println!("listening on {path}");
        let counters = Arc::clone(&counters);
        std::thread::spawn(move || {
            for stream in unix.incoming().flatten() {
                counters.connections.fetch_add(1, Ordering::Relaxed);
                let counters = Arc::clone(&counters);
                let Ok(writer) = stream.try_clone() else { continue };
                std::thread::spawn(move || serve(stream, writer, &counters));
            }
        });
    }
    for stream in listener.incoming().flatten() {
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let counters = Arc::clone(&counters);
        let _ = stream.set_nodelay(true);
        let Ok(writer) = stream.try_clone() else { continue };
        std::thread::spawn(move || serve(stream, writer, &counters));
    }
}

/// Serves one connection, TCP or Unix: `read_half` and `writer` are the same socket.
fn serve(read_half: impl Read, mut writer: impl Write, counters: &Counters) {
    let mut reader = BufReader::with_capacity(16 * 1024, read_half);
    let mut line = String::new();
    let mut reply = Vec::with_capacity(512);
    loop {
        // Request line, then headers up to the blank line; benchmark requests carry no body.
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let method = line.split_whitespace().next().unwrap_or("GET").to_string();
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut close = false;
        let mut bearer = None;
        let mut length = 0;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" || line == "\n" => break,
                Ok(_) => {
                    close |= line.to_ascii_lowercase().starts_with("connection: close");
                    if line.to_ascii_lowercase().starts_with("authorization: bearer ") {
                        bearer = Some(line[22..].trim().to_string());
                    }
                    if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = n.trim().parse().unwrap_or(0);
                    }
                }
            }
        }
        // A PUT's body (an ARM template) is read and ignored.
        if std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink()).is_err() {
            return;
        }
        counters.requests.fetch_add(1, Ordering::Relaxed);
        let (status, headers, body) = match arm(&method, &target, counters) {
            Some(answer) => answer,
            None => {
                let (status, body) = route(&target, bearer.as_deref(), counters);
                (status, String::new(), body)
            }
        };
        reply.clear();
        let _ = write!(
            reply,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if writer.write_all(&reply).is_err() || close {
            return;
        }
    }
}

/// Azure Resource Manager's routes: (status, extra header lines, body), or `None` for another route.
fn arm(method: &str, target: &str, counters: &Counters) -> Option<(&'static str, String, String)> {
    const SUB: &str = "/subscriptions/s1";
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let rest = path.strip_prefix(SUB)?;
    let mut polls = counters.arm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (kind, name) = rest.rsplit_once('/')?;
    let name = name.to_string();
    // One more status poll of `name`'s operation; whether it is done now.
    let mut poll = |name: &str| {
        let n = polls.entry(name.to_string()).or_insert(0);
        *n += 1;
        *n >= ARM_POLLS
    };
    let deployments = "/resourceGroups/rg/providers/Microsoft.Resources/deployments";
    let accounts = "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts";
    let answer = match (method, kind) {
        ("PUT", k) if k == deployments => {
            polls.insert(name.clone(), 0);
            let header = format!(
                "Azure-AsyncOperation: {SUB}/providers/Microsoft.Resources/operations/{name}\r\nRetry-After: 1\r\n"
            );
            ("201 Created", header, format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Accepted"}}}}"#))
        }
        ("GET", "/providers/Microsoft.Resources/operations") => {
            let status = if poll(&name) { "Succeeded" } else { "Running" };
            ("200 OK", String::new(), format!(r#"{{"status":"{status}"}}"#))
        }
        ("GET", k) if k == deployments => {
            let done = polls.get(&name).is_some_and(|n| *n >= ARM_POLLS);
            let body = if done {
                format!(
                    r#"{{"name":"{name}","properties":{{"provisioningState":"Succeeded","outputs":{{"siteUrl":{{"type":"String","value":"https://{name}.azurewebsites.net"}}}}}}}}"#
                )
            } else {
                format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Running"}}}}"#)
            };
            ("200 OK", String::new(), body)
        }
        ("PUT", k) if k == accounts => {
            polls.insert(name.clone(), 0);
            (
                "201 Created",
                String::new(),
                format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Creating"}}}}"#),
            )
        }
        ("GET", k) if k == accounts => {
            let state = if poll(&name) { "Succeeded" } else { "Creating" };
            ("200 OK", String::new(), format!(r#"{{"name":"{name}","properties":{{"provisioningState":"{state}"}}}}"#))
        }
        ("DELETE", k) if k == accounts => {
            polls.insert(format!("delete-{name}"), 0);
            let header =
                format!("Location: {SUB}/providers/Microsoft.Storage/operationResults/{name}\r\nRetry-After: 1\r\n");
            ("202 Accepted", header, String::new())
        }
        ("GET", "/providers/Microsoft.Storage/operationResults") => {
            let done = poll(&format!("delete-{name}"));
            (if done { "204 No Content" } else { "202 Accepted" }, String::new(), String::new())
        }
        _ => ("404 Not Found", String::new(), r#"{"error":{"code":"ResourceNotFound"}}"#.to_string()),
    };
    Some(answer)
}

fn route(target: &str, bearer: Option<&str>, counters: &Counters) -> (&'static str, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let now = SystemTime::now();
    if path.starts_with("/app/installations/") && path.ends_with("/access_tokens") {
        let default = std::env::var("JOBSERVER_TOKEN_TTL").ok().and_then(|n| n.parse().ok()).unwrap_or(3600);
        let ttl = query.strip_prefix("ttl=").and_then(|n| n.parse().ok()).unwrap_or(default);
        let expires = now + Duration::from_secs(ttl);
        let mut tokens = counters.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let nanos = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let token = format!("ghs_{:04}{nanos:08x}", tokens.len() + 1);
        tokens.push((token.clone(), expires));
        let stamp = humantime::format_rfc3339_seconds(expires);
        return ("201 Created", format!(r#"{{"token":"{token}","expires_at":"{stamp}"}}"#));
    }
    match path {
        "/private/job" => {
            let tokens = counters.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !tokens.iter().any(|(token, expires)| Some(token.as_str()) == bearer && *expires > now) {
                counters.refused.fetch_add(1, Ordering::Relaxed);
                return ("401 Unauthorized", r#"{"message":"Bad credentials"}"#.to_string());
            }
            drop(tokens);
            route("/job", None, counters)
        }
        "/job" => {
            let n = counters.polls.fetch_add(1, Ordering::Relaxed) + 1;
            let status = if n >= counters.target.load(Ordering::Relaxed) { "done" } else { "pending" };
            ("200 OK", format!(r#"{{"status":"{status}","n":{n}}}"#))
        }
        "/reset" => {
            let n = query.strip_prefix("n=").and_then(|n| n.parse().ok()).unwrap_or(1);
            counters.target.store(n, Ordering::Relaxed);
            counters.polls.store(0, Ordering::Relaxed);
            ("200 OK", format!(r#"{{"target":{n}}}"#))
        }
        "/ok" => ("200 OK", r#"{"status":"done","n":1}"#.to_string()),
        "/containers/db/json" | "/containers/bad/json" => {
            let n = counters.polls.fetch_add(1, Ordering::Relaxed) + 1;
            let ended = if path == "/containers/db/json" { "healthy" } else { "unhealthy" };
            let health = if n >= counters.target.load(Ordering::Relaxed) { ended } else { "starting" };
            let body = format!(
                r#"{{"Id":"4f2c","Name":"/db","State":{{"Status":"running","Running":true,"Health":{{"Status":"{health}","FailingStreak":0}}}}}}"#
            );
            ("200 OK", body)
        }
        "/hang" => {
            std::thread::sleep(std::time::Duration::from_secs(60));
            ("200 OK", r#"{"status":"late"}"#.to_string())
        }
        "/stats" => (
            "200 OK",
            format!(
                r#"{{"connections":{},"requests":{},"refused":{}}}"#,
                counters.connections.load(Ordering::Relaxed),
                counters.requests.load(Ordering::Relaxed),
                counters.refused.load(Ordering::Relaxed)
            ),
        ),
        _ => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
    }
}

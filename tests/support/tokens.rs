//! A loopback HTTP/1.1 server that accepts only the bearer tokens it holds valid, for the
//! credential tests: each route answers its reply to a request whose `Authorization: Bearer T`
//! names a valid token, and 401 to any other. The valid set changes on command (`rotate`,
//! `accept`), when the k-th request arrives (`rotate_at`), or on a timer (`rotate_after`).
//!
//! Keep-alive, one thread per connection, `Content-Length` bodies only; every request is
//! logged with the status it got. Like `server.rs`, it panics on drop if a request named a
//! route it does not have.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// One request as it arrived, and what it got.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    pub status: u16,
    pub at: Instant,
}

impl Seen {
    /// The bearer token sent, if any.
    pub fn token(&self) -> Option<&str> {
        self.authorization.as_deref().and_then(|a| a.strip_prefix("Bearer "))
    }
}

/// What a route answers to an authorised request. `{n}` in the body is replaced by the number
/// of authorised requests that route has had, this one included.
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    pub fn json(status: u16, body: &str) -> Answer {
        Answer { status, headers: vec![("Content-Type".into(), "application/json".into())], body: body.into() }
    }

    pub fn header(mut self, name: &str, value: &str) -> Answer {
        self.headers.push((name.into(), value.into()));
        self
    }
}

#[derive(Default)]
struct State {
    routes: HashMap<String, (Answer, usize)>,
    valid: Vec<String>,
    /// At the k-th request (from 1), before it is judged: the only valid token becomes this.
    rotations: Vec<(usize, String)>,
    log: Vec<Seen>,
    unknown: Vec<String>,
    /// How long a 401 takes to be sent.
    slow_401: Duration,
}

struct Shared {
    state: Mutex<State>,
    arrived: Condvar,
    stopped: Mutex<bool>,
    open: Mutex<Vec<TcpStream>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct TokenServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<thread::JoinHandle<()>>,
}

impl TokenServer {
    /// A server with `routes`, which holds `token` valid.
    pub fn start(token: &str, routes: Vec<(&str, Answer)>) -> TokenServer {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local_addr");
        let state = State {
            routes: routes.into_iter().map(|(path, answer)| (path.to_string(), (answer, 0))).collect(),
            valid: vec![token.to_string()],
            ..State::default()
        };
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            arrived: Condvar::new(),
            stopped: Mutex::new(false),
            open: Mutex::new(Vec::new()),
        });
        let sh = Arc::clone(&shared);
        let acceptor = thread::spawn(move || {
            for stream in listener.incoming() {
                if *lock(&sh.stopped) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let _ = stream.set_nodelay(true);
                if let Ok(clone) = stream.try_clone() {
                    lock(&sh.open).push(clone);
                }
                let sh = Arc::clone(&sh);
                thread::spawn(move || serve(stream, &sh));
            }
        });
        TokenServer { addr, shared, acceptor: Some(acceptor) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// From now on only `token` is valid.
    pub fn rotate(&self, token: &str) {
        lock(&self.shared.state).valid = vec![token.to_string()];
    }

    /// `token` is valid too, from now on.
    pub fn accept(&self, token: &str) {
        lock(&self.shared.state).valid.push(token.to_string());
    }

    /// When the `hit`-th request arrives (from 1), only `token` is valid, for it and after.
    pub fn rotate_at(self, hit: usize, token: &str) -> TokenServer {
        lock(&self.shared.state).rotations.push((hit, token.to_string()));
        self
    }

    /// Every 401 is sent only after `delay`: requests that arrive meanwhile are all refused too.
    pub fn slow_401(self, delay: Duration) -> TokenServer {
        lock(&self.shared.state).slow_401 = delay;
        self
    }

    /// After `delay`, only `token` is valid.
    pub fn rotate_after(&self, delay: Duration, token: &str) {
        let (shared, token) = (Arc::clone(&self.shared), token.to_string());
        thread::spawn(move || {
            thread::sleep(delay);
            lock(&shared.state).valid = vec![token];
        });
    }

    pub fn requests(&self) -> Vec<Seen> {
        lock(&self.shared.state).log.clone()
    }

    pub fn statuses(&self) -> Vec<u16> {
        self.requests().iter().map(|seen| seen.status).collect()
    }

    /// Waits until at least `n` requests arrived; false on timeout.
    pub fn wait_hits(&self, n: usize, timeout: Duration) -> bool {
        super::arrivals::wait_until(&self.shared.state, &self.shared.arrived, timeout, |state| state.log.len() >= n)
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        *lock(&self.shared.stopped) = true;
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(500));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        for stream in lock(&self.shared.open).iter() {
            let _ = stream.shutdown(Shutdown::Both);
        }
        let unknown = std::mem::take(&mut lock(&self.shared.state).unknown);
        if !thread::panicking() && !unknown.is_empty() {
            panic!("token server {}: requests to routes it does not have: {}", self.addr, unknown.join(", "));
        }
    }
}

fn serve(stream: TcpStream, sh: &Shared) {
    let Ok(read) = stream.try_clone() else { return };
    let mut reader = BufReader::new(read);
    let mut writer = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let at = Instant::now();
        let mut parts = line.split_whitespace();
        let (method, target) = (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("/").to_string());
        let (mut authorization, mut length, mut close, mut chunked) = (None, 0usize, false, false);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let Some((name, value)) = header.split_once(':') else { continue };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
            match name.as_str() {
                "authorization" => authorization = Some(value),
                "content-length" => length = value.parse().unwrap_or(0),
                "connection" => close = value.eq_ignore_ascii_case("close"),
                "transfer-encoding" => chunked = value.to_ascii_lowercase().contains("chunked"),
                _ => {}
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() || (chunked && skip_chunks(&mut reader).is_none()) {
            return;
        }
        let path = target.split('?').next().unwrap_or("/").to_string();
        let (status, headers) = {
            let mut state = lock(&sh.state);
            let hit = state.log.len() + 1;
            let rotations: Vec<String> =
                state.rotations.iter().filter(|(at, _)| *at == hit).map(|(_, t)| t.clone()).collect();
            if let Some(token) = rotations.last() {
                state.valid = vec![token.clone()];
            }
            let token = authorization.as_deref().and_then(|a| a.strip_prefix("Bearer "));
            let authorised = token.is_some_and(|token| state.valid.iter().any(|v| v == token));
            let answer = match state.routes.get_mut(&path) {
                None => {
                    state.unknown.push(format!("{method} {target}"));
                    (404, Vec::new(), String::new())
                }
                Some(_) if !authorised => (401, vec![("WWW-Authenticate".into(), "Bearer".into())], String::new()),
                Some((answer, n)) => {
                    *n += 1;
                    (answer.status, answer.headers.clone(), answer.body.replace("{n}", &n.to_string()))
                }
            };
            state.log.push(Seen { path, authorization, status: answer.0, at });
            sh.arrived.notify_all();
            (answer, state.slow_401)
        };
        let ((status, headers, body), slow_401) = (status, headers);
        if status == 401 {
            thread::sleep(slow_401);
        }
        let mut reply = format!("HTTP/1.1 {status} Status\r\nContent-Length: {}\r\n", body.len());
        for (name, value) in headers {
            reply.push_str(&format!("{name}: {value}\r\n"));
        }
        reply.push_str("\r\n");
        reply.push_str(&body);
        if writer.write_all(reply.as_bytes()).and_then(|()| writer.flush()).is_err() || close {
            return;
        }
    }
}

/// Reads a chunked body to its end (the sizes, the chunks, the trailer); `None` if it breaks off.
fn skip_chunks(reader: &mut impl BufRead) -> Option<()> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let size = usize::from_str_radix(line.trim().split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            loop {
                let mut trailer = String::new();
                if reader.read_line(&mut trailer).ok()? == 0 || trailer.trim().is_empty() {
                    return Some(());
                }
            }
        }
        let mut chunk = vec![0u8; size + 2];
        reader.read_exact(&mut chunk).ok()?;
    }
}

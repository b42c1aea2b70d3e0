//! A fake Redis on 127.0.0.1 that answers each command as the test says:
//! at once, one byte at a time, or with an error line that never ends; for
//! what a hostile or broken server sends and a real one never does.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How to answer one command.
pub enum Answer {
    /// These bytes, at once.
    Now(Vec<u8>),
    /// These bytes, one every `every`.
    Trickle { bytes: Vec<u8>, every: Duration },
    /// `-ERR xxxx...` without an end, as fast as the client reads it.
    Endless,
}

type Script = dyn Fn(&[String]) -> Answer + Send + Sync;

struct Shared {
    stopped: AtomicBool,
    /// Every command, as its words.
    commands: Mutex<Vec<Vec<String>>>,
    /// Bytes written to clients in all.
    written: AtomicUsize,
    /// Connections accepted, and those of them served to their end.
    accepted: AtomicUsize,
    ended: AtomicUsize,
}

pub struct FakeRedis {
    port: u16,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl FakeRedis {
    pub fn start(script: impl Fn(&[String]) -> Answer + Send + Sync + 'static) -> FakeRedis {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let shared = Arc::new(Shared {
            stopped: AtomicBool::new(false),
            commands: Mutex::new(Vec::new()),
            written: AtomicUsize::new(0),
            accepted: AtomicUsize::new(0),
            ended: AtomicUsize::new(0),
        });
        let script: Arc<Script> = Arc::new(script);
        let accepting = Arc::clone(&shared);
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    return;
                }
                accepting.accepted.fetch_add(1, Ordering::SeqCst);
                let (shared, script) = (Arc::clone(&accepting), Arc::clone(&script));
                std::thread::spawn(move || {
                    serve(stream, &shared, &*script);
                    shared.ended.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        FakeRedis { port, shared, acceptor: Some(acceptor) }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The commands' names, in order.
    pub fn commands(&self) -> Vec<String> {
        let commands = self.shared.commands.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        commands.iter().map(|words| words.first().cloned().unwrap_or_default().to_ascii_uppercase()).collect()
    }

    pub fn written(&self) -> usize {
        self.shared.written.load(Ordering::SeqCst)
    }

    /// Whether every connection accepted so far was served to its end (its client gone, its
    /// answer stopped): [`written`](Self::written) then grows no more.
    pub fn all_ended(&self) -> bool {
        self.shared.ended.load(Ordering::SeqCst) == self.shared.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FakeRedis {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

fn serve(stream: TcpStream, shared: &Shared, script: &Script) {
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    while let Some(words) = command(&mut reader) {
        if shared.stopped.load(Ordering::SeqCst) {
            return;
        }
        let answer = script(&words);
        shared.commands.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(words);
        let sent = match answer {
            Answer::Now(bytes) => writer.write_all(&bytes).map(|()| bytes.len()),
            Answer::Trickle { bytes, every } => {
                let mut sent = Ok(0);
                for byte in bytes {
                    std::thread::sleep(every);
                    if shared.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    sent = writer.write_all(&[byte]).map(|()| 1);
                    if sent.is_err() {
                        break;
                    }
                    shared.written.fetch_add(1, Ordering::SeqCst);
                }
                sent.map(|_| 0)
            }
            Answer::Endless => {
                let chunk = vec![b'x'; 64 << 10];
                let _ = writer.write_all(b"-ERR ");
                while !shared.stopped.load(Ordering::SeqCst) && writer.write_all(&chunk).is_ok() {
                    shared.written.fetch_add(chunk.len(), Ordering::SeqCst);
                }
                return;
            }
        };
        match sent {
            Ok(n) => {
                shared.written.fetch_add(n, Ordering::SeqCst);
            }
            Err(_) => return,
        }
    }
}

/// One command: a RESP array of bulk strings (`*N`, then `$LEN` and the bytes, N times).
fn command(reader: &mut impl BufRead) -> Option<Vec<String>> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let count: usize = line.trim().strip_prefix('*')?.parse().ok()?;
    let mut words = Vec::with_capacity(count);
    for _ in 0..count {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let len: usize = line.trim().strip_prefix('$')?.parse().ok()?;
        let mut word = vec![0; len + 2];
        reader.read_exact(&mut word).ok()?;
        word.truncate(len);
        words.push(String::from_utf8_lossy(&word).into_owned());
    }
    Some(words)
}

//! The transport under ureq's HTTP/1.1: [`Wire`] over a TCP or a Unix
//! socket, and [`Tls`] over either. The gap it fills: ureq's own transports
//! touch all of their buffers a connection from the start (each URL keeps its
//! connection, so that was most of the memory of 1,000 URLs), ask the kernel
//! several more times a request than a poll needs (docs/BENCHMARKS.md,
//! "Closer to the limits"), and have no Unix sockets. Here the input buffer starts at a page
//! and grows only as replies need it, a pooled connection's liveness is one
//! non-blocking peek (`probe`, per platform) made only when it is taken, and a
//! socket timeout is set only when it moved by more than an eighth (a read
//! that times out early reads again for what is left).
//!
//! It implements `ureq::unversioned::transport::Transport`, which ureq may
//! change in any minor release: CONTRIBUTING.md's "Upgrading ureq or jaq".

use std::fmt;
use std::io::{self, ErrorKind, Read as _, Write as _};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rustls::{ClientConnection, StreamOwned};
use socket2::Socket;
use ureq::Timeout;
use ureq::unversioned::transport::{self, ConnectionDetails, NextTimeout, ShutdownHandle, Transport, TransportAdapter};

use crate::util::sync::lock;
use crate::util::timeout;

/// How late past its timeout a read or write may end: a timeout set for
/// the request before is kept when it is at most this much longer.
const SLACK: Duration = Duration::from_millis(1);

/// The longest one socket wait is. Linux ends a long socket timeout late by
/// its timer wheel's coarser steps (a read timeout of 2 s ended 25 ms late,
/// one of 20 s 370 ms late, past the run's deadline and its grace): a longer
/// wait is made of waits of at most this, each late by a few ms at most.
const LONGEST_WAIT: Duration = Duration::from_secs(1);

/// HTTP/1.1 bytes over a connected stream socket, TCP or Unix.
#[derive(Debug)]
pub(crate) struct Wire {
    socket: Arc<SharedSocket>,
    buffers: Buffers,
    /// The timeouts last set on the socket, so that one is set only when it moved.
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// Bytes went either way since the last liveness probe.
    used: bool,
    /// `--watch`: no read waits longer than its [`Silence`] allows, whatever
    /// ureq allows the whole reply (ureq bounds phases of a call, not silences).
    silence: Option<Silence>,
}

impl Wire {
    /// A transport over `socket`, registered for the agent's shutdown, whose
    /// reads wait at most what `silence` allows each.
    pub(crate) fn new(
        socket: Socket,
        details: &ConnectionDetails,
        silence: Option<Silence>,
    ) -> Result<Wire, ureq::Error> {
        let socket = Arc::new(SharedSocket(socket));
        (details.register_shutdown)(Arc::downgrade(&socket) as Weak<dyn ShutdownHandle>)?;
        let buffers = Buffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Wire { socket, buffers, read_timeout: None, write_timeout: None, used: false, silence })
    }
}

/// `--watch`: how long a read of a held reply may wait, for every connection
/// of a loop: `--idle-timeout`, and no later than the moment the loop last set
/// ([`Silence::wake_by`]: when `--stall` would fire), so that a reply that
/// stays quiet (heartbeats, or nothing) wakes the loop when there is
/// something to decide. A read cut short either way is a timeout of the body.
#[derive(Debug, Clone)]
pub(crate) struct Silence(Arc<ReadBounds>);

/// What a [`Silence`] shares: one pointer in each connection and stream.
#[derive(Debug)]
struct ReadBounds {
    idle: Option<Duration>,
    wake: Mutex<Option<Instant>>,
}

impl Silence {
    /// Reads that wait at most `idle` each (`None`: no bound), until a wake is set.
    pub(crate) fn new(idle: Option<Duration>) -> Silence {
        Silence(Arc::new(ReadBounds { idle, wake: Mutex::new(None) }))
    }

    /// From now on no read waits past `at` (`None`: only `idle` bounds them).
    pub(crate) fn wake_by(&self, at: Option<Instant>) {
        *lock(&self.0.wake) = at;
    }

    /// The longest the next read may wait, from now.
    fn bound(&self) -> Option<Duration> {
        let wake = lock(&self.0.wake).map(|at| at.saturating_duration_since(Instant::now()));
        [self.0.idle, wake].into_iter().flatten().min()
    }
}

impl Transport for Wire {
    fn buffers(&mut self) -> &mut dyn transport::Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        let budget = Budget::of(timeout.for_write())?;
        let output = self.buffers.output.get(..amount).unwrap_or_default();
        self.used = true;
        let mut sent = 0;
        while sent < output.len() {
            // A write in pieces shares its time: a piece after the first has what is left.
            let first = if sent == 0 { budget.wanted } else { budget.rest()? };
            let set = &mut self.write_timeout;
            sent += within(&self.socket.0, &budget, first, set, Socket::set_write_timeout, |mut socket| {
                socket.write(&output[sent..])
            })?;
        }
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        let budget = Budget::of(timeout.for_read())?.at_most(self.silence.as_ref().and_then(Silence::bound));
        let input = transport::Buffers::input_append_buf(&mut self.buffers);
        self.used = true;
        let set = &mut self.read_timeout;
        let read = |mut socket: &Socket| socket.read(input);
        let amount = within(&self.socket.0, &budget, budget.wanted, set, Socket::set_read_timeout, read)?;
        transport::Buffers::input_appended(&mut self.buffers, amount);
        Ok(amount > 0)
    }

    /// ureq asks when a connection goes back to the pool, right after its
    /// reply, and again when it is taken for the next request. Only the second
    /// answer decides anything (a connection found dead then is closed, and
    /// another opened), so the first is not put to the kernel.
    fn is_open(&mut self) -> bool {
        std::mem::take(&mut self.used) || probe::open(&self.socket.0)
    }
}

/// HTTP/1.1 over TLS over another transport (a [`Wire`], or the tunnel of a
/// proxy's `CONNECT`), on this process's one configuration (`net/tls.rs`),
/// with the same buffers as [`Wire`].
pub(crate) struct Tls {
    buffers: Buffers,
    stream: StreamOwned<ClientConnection, TransportAdapter>,
}

impl Tls {
    /// `connection`'s handshake over `plain`, within `details`' connect timeout.
    pub(crate) fn handshake(
        mut connection: ClientConnection,
        plain: Box<dyn Transport>,
        details: &ConnectionDetails,
    ) -> Result<Tls, ureq::Error> {
        let mut socket = TransportAdapter::new(plain, details.current_time.clone());
        socket.set_timeout(details.timeout);
        connection.complete_io(&mut socket)?;
        let buffers = Buffers::new(details.config.input_buffer_size(), details.config.output_buffer_size());
        Ok(Tls { buffers, stream: StreamOwned { conn: connection, sock: socket } })
    }
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

impl Transport for Tls {
    fn buffers(&mut self) -> &mut dyn transport::Buffers {
        &mut self.buffers
    }

    fn transmit_output(&mut self, amount: usize, timeout: NextTimeout) -> Result<(), ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let output = &transport::Buffers::output(&mut self.buffers)[..amount];
        self.stream.write_all(output)?;
        Ok(())
    }

    fn await_input(&mut self, timeout: NextTimeout) -> Result<bool, ureq::Error> {
        self.stream.get_mut().set_timeout(timeout);
        let input = transport::Buffers::input_append_buf(&mut self.buffers);
        let amount = self.stream.read(input)?;
        transport::Buffers::input_appended(&mut self.buffers, amount);
        Ok(amount > 0)
    }

    fn is_open(&mut self) -> bool {
        self.stream.get_mut().get_mut().is_open()
    }

    fn is_tls(&self) -> bool {
        true
    }
}

/// ureq's time for one read or write: `wanted` from `started` (`None`: no
/// limit), and the timeout it ends with.
struct Budget {
    wanted: Option<Duration>,
    started: Instant,
    reason: Timeout,
}

impl Budget {
    /// The budget `timeout` gives from now, or its error when already spent.
    fn of(timeout: NextTimeout) -> Result<Budget, ureq::Error> {
        if timeout.after.is_zero() {
            return Err(ureq::Error::Timeout(timeout.reason));
        }
        Ok(Budget { wanted: timeout.not_zero().map(|t| *t), started: Instant::now(), reason: timeout.reason })
    }

    /// The budget, cut to `idle` when that is shorter: a silence that long
    /// is a timeout of the body, whatever ureq's own bound. (An `idle` of 0,
    /// a wake already past, still reads what has arrived.)
    fn at_most(self, idle: Option<Duration>) -> Budget {
        match (self.wanted, idle) {
            (Some(wanted), Some(idle)) if wanted <= idle => self,
            (_, Some(idle)) => Budget { wanted: Some(idle), reason: Timeout::RecvBody, ..self },
            (_, None) => self,
        }
    }

    /// What is left of it now, or its timeout when nothing is.
    fn rest(&self) -> Result<Option<Duration>, ureq::Error> {
        let Some(wanted) = self.wanted else { return Ok(None) };
        match wanted.checked_sub(self.started.elapsed()) {
            Some(left) if !left.is_zero() => Ok(Some(left)),
            _ => Err(ureq::Error::Timeout(self.reason)),
        }
    }
}

/// Runs `io` (one read or write on `socket`) within `budget`, its first try
/// within `first` (what the caller knows is left, without asking the clock):
/// the socket's timeout (`set`, by `setter`, in the platform's unit) is kept
/// while it is close enough, and an early timeout or a signal (Linux does
/// not restart a socket call with a timeout after one) tries again with what
/// is left. No try has a timeout under one unit, and a coarse timer (Linux's
/// jiffies, Windows' ticks) ends a wait no sooner than its next tick, so an
/// early end is tried again once or twice, never in a busy loop; the loop
/// ends when nothing is left.
fn within(
    socket: &Socket,
    budget: &Budget,
    first: Option<Duration>,
    set: &mut Option<Duration>,
    setter: fn(&Socket, Option<Duration>) -> io::Result<()>,
    mut io: impl FnMut(&Socket) -> io::Result<usize>,
) -> Result<usize, ureq::Error> {
    let mut left = first;
    loop {
        let wanted = left.map(|left| timeout::socket(left.min(LONGEST_WAIT)));
        if !close_enough(*set, wanted) {
            setter(socket, wanted)?;
            *set = wanted;
        }
        match io(socket) {
            Ok(amount) => return Ok(amount),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if budget.wanted.is_some() && matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(ureq::Error::Io(e)),
        }
        left = budget.rest()?;
    }
}

/// Whether a socket timeout of `set` serves a wait of `wanted`: at most
/// [`SLACK`] longer, and no more than an eighth shorter (a read that times
/// out early is tried again).
fn close_enough(set: Option<Duration>, wanted: Option<Duration>) -> bool {
    match (set, wanted) {
        (None, None) => true,
        (Some(set), Some(wanted)) => set <= wanted + SLACK && set >= wanted - wanted / 8,
        _ => false,
    }
}

/// The socket, shared with the agent's shutdown handle.
#[derive(Debug)]
struct SharedSocket(Socket);

impl ShutdownHandle for SharedSocket {
    fn shutdown(&self) {
        let _ = self.0.shutdown(std::net::Shutdown::Both);
    }
}

/// ureq's input and output buffers, as its `LazyBuffers` keeps them but
/// for their memory: the input starts at [`FIRST_INPUT`] and doubles, up to
/// its size, only when a read filled it (a poll's reply is mostly a few
/// hundred bytes, and each connection keeps its buffers); the output is
/// allocated at its size on first use. Both are zero-filled when allocated
/// (glibc's `calloc` clears the arena memory it reuses), so only what is
/// allocated is touched.
pub(crate) struct Buffers {
    input_size: usize,
    output_size: usize,
    input: Vec<u8>,
    /// `input[consumed..filled]` is read and not yet used.
    filled: usize,
    consumed: usize,
    /// The last read filled all the room it had: the next gets more.
    outgrown: bool,
    output: Vec<u8>,
    /// The last consume took something: what is left may be usable as it is.
    progress: bool,
}

/// The input buffer's first size: a page.
const FIRST_INPUT: usize = 4 << 10;

impl Buffers {
    pub(crate) fn new(input_size: usize, output_size: usize) -> Buffers {
        let (input_size, output_size) = (input_size.max(1), output_size.max(1));
        let (input, output) = (Vec::new(), Vec::new());
        Buffers { input_size, output_size, input, filled: 0, consumed: 0, outgrown: false, output, progress: false }
    }

    /// The free space at the end of the input, with what is unread moved to
    /// the start when it was all used or fills more than half, and the
    /// buffer grown when the last read filled it.
    fn free(&mut self) -> &mut [u8] {
        if self.consumed == self.filled {
            (self.consumed, self.filled) = (0, 0);
        } else if self.consumed > 0 && self.filled > self.input.len() / 2 {
            self.input.copy_within(self.consumed..self.filled, 0);
            self.filled -= self.consumed;
            self.consumed = 0;
        }
        if self.input.is_empty() || (self.outgrown && self.input.len() < self.input_size) {
            let size = (self.input.len() * 2).clamp(FIRST_INPUT, self.input_size);
            self.input.resize(size, 0);
            self.outgrown = false;
        }
        &mut self.input[self.filled..]
    }
}

impl transport::Buffers for Buffers {
    fn output(&mut self) -> &mut [u8] {
        if self.output.is_empty() {
            self.output = vec![0; self.output_size];
        }
        &mut self.output
    }

    fn input(&self) -> &[u8] {
        &self.input[self.consumed..self.filled]
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.free()
    }

    fn input_appended(&mut self, amount: usize) {
        self.outgrown = amount > 0 && self.filled + amount >= self.input.len();
        self.filled = (self.filled + amount).min(self.input.len());
    }

    fn input_consume(&mut self, amount: usize) {
        self.progress = amount > 0;
        self.consumed = (self.consumed + amount).min(self.filled);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        // ureq reads a request body into the input's free space: at least 10 KiB of it, as in LazyBuffers.
        const MIN_TMP: usize = 10 * 1024;
        transport::Buffers::output(self);
        let free = self.free().len();
        if free < MIN_TMP {
            self.input.resize(self.input.len() + MIN_TMP - free, 0);
        }
        let Buffers { input, filled, output, .. } = self;
        (&mut input[*filled..], output)
    }

    fn can_use_input(&self) -> bool {
        self.filled > self.consumed && self.progress
    }
}

impl fmt::Debug for Buffers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffers").field("unread", &(self.filled - self.consumed)).finish_non_exhaustive()
    }
}

/// Whether a pooled connection can take a request: no bytes waiting, no end of stream.
#[cfg(unix)]
mod probe {
    use std::os::fd::AsRawFd as _;

    use nix::errno::Errno;
    use nix::sys::socket::{MsgFlags, recv};
    use socket2::Socket;

    /// One non-blocking peek, the socket left as it was.
    pub(super) fn open(socket: &Socket) -> bool {
        let mut byte = [0];
        recv(socket.as_raw_fd(), &mut byte, MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT) == Err(Errno::EAGAIN)
    }
}

/// Whether a pooled connection can take a request: no bytes waiting, no end of stream.
#[cfg(not(unix))]
mod probe {
    use std::io::ErrorKind;
    use std::mem::MaybeUninit;

    use socket2::Socket;

    /// Windows has no per-call non-blocking flag: the socket is made non-blocking for one peek.
    pub(super) fn open(socket: &Socket) -> bool {
        if socket.set_nonblocking(true).is_err() {
            return false;
        }
        let mut byte = [MaybeUninit::uninit()];
        let open = matches!(socket.peek(&mut byte), Err(e) if e.kind() == ErrorKind::WouldBlock);
        socket.set_nonblocking(false).is_ok() && open
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::unversioned::transport::Buffers as _;

    #[test]
    fn a_read_waits_no_longer_than_the_idle_timeout_nor_past_the_wake() {
        let secs = Duration::from_secs;
        let silence = Silence::new(Some(secs(90)));
        assert_eq!(silence.bound(), Some(secs(90)));
        // A wake sooner than the idle timeout bounds the read; a later one leaves it.
        silence.wake_by(Some(Instant::now() + secs(10)));
        assert!(silence.bound().is_some_and(|bound| bound <= secs(10) && bound > secs(9)));
        silence.wake_by(Some(Instant::now() + secs(300)));
        assert_eq!(silence.bound(), Some(secs(90)));
        // One already past: no wait (what has arrived is still read), in every clone.
        let shared = silence.clone();
        silence.wake_by(Some(Instant::now()));
        assert_eq!(shared.bound(), Some(Duration::ZERO));
        silence.wake_by(None);
        assert_eq!(shared.bound(), Some(secs(90)));
        // --idle-timeout 0: only a wake bounds a read.
        let unbounded = Silence::new(None);
        assert_eq!(unbounded.bound(), None);
        unbounded.wake_by(Some(Instant::now() + secs(5)));
        assert!(unbounded.bound().is_some_and(|bound| bound <= secs(5)));
    }

    #[test]
    fn the_input_grows_only_when_a_read_fills_it_and_never_past_its_size() {
        let mut buffers = Buffers::new(10_000, 100);
        assert_eq!(buffers.input_append_buf().len(), FIRST_INPUT);
        buffers.input_appended(300);
        assert_eq!(buffers.input(), &[0; 300][..]);
        buffers.input_consume(300);
        // All used: the room is the whole first page again, not more.
        assert_eq!(buffers.input_append_buf().len(), FIRST_INPUT);
        buffers.input_appended(FIRST_INPUT);
        assert_eq!(buffers.input_append_buf().len(), FIRST_INPUT, "filled: doubled, the unread kept");
        assert_eq!(buffers.input().len(), FIRST_INPUT);
        buffers.input_appended(FIRST_INPUT);
        assert_eq!(buffers.input_append_buf().len(), 10_000 - 2 * FIRST_INPUT, "capped at its size");
        buffers.input_appended(10_000 - 2 * FIRST_INPUT);
        assert_eq!(buffers.input_append_buf().len(), 0, "full: ureq sees a head too large");
        assert_eq!(buffers.output().len(), 100);
    }

    #[test]
    fn a_socket_timeout_is_kept_while_it_is_close_enough() {
        let s = Duration::from_secs;
        let ms = Duration::from_millis;
        assert!(close_enough(None, None));
        assert!(!close_enough(None, Some(s(30))));
        assert!(!close_enough(Some(s(30)), None));
        // The same request timeout a few microseconds later: kept.
        assert!(close_enough(Some(s(30)), Some(s(30) - Duration::from_micros(3))));
        assert!(close_enough(Some(s(30) - ms(1)), Some(s(30))));
        // More than SLACK longer than wanted: a read would end late.
        assert!(!close_enough(Some(s(30)), Some(s(30) - ms(2))));
        // Much shorter than wanted: set again rather than time out early over and over.
        assert!(!close_enough(Some(s(20)), Some(s(30))));
    }
}

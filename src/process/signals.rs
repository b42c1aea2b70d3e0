//! The signals that end a run, one call for every platform: [`listen`]
//! turns SIGINT, SIGTERM and SIGHUP (Unix), or Ctrl-C and Ctrl-Break
//! (Windows), into calls on a thread of their own, which tell the run to end;
//! [`SignalEnd`] makes the first signal decide the run's words and exit code,
//! whatever comes after it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::error::{Error, Signal};
use crate::util::sync::lock;

/// How long a second signal lets the ending of a run that a first signal
/// ended go on (a signal sent twice, as GNU `timeout` sends one to the
/// process and one to its group, must not cut its report short), before it
/// takes that ending as stuck (`--report-junit` to a FIFO nobody reads).
const SECOND_SIGNAL_GRACE: Duration = Duration::from_millis(250);

/// The signal that ended the run, if one did, and who says the run's last
/// word: its ending (`Ending::close`), or a signal that comes while the
/// ending is still being written and ends the process itself.
#[derive(Debug, Default)]
pub(crate) struct SignalEnd {
    by: OnceLock<Signal>,
    spoken: AtomicBool,
    /// `--start`: once the run is over, a signal no longer ends the process at once: the
    /// started server must be stopped first, and `-- CMD` (a child then) gets it.
    held: Mutex<Option<Held>>,
}

/// What [`SignalEnd::hold`] keeps: the first signal that came, and the child it is passed on to.
#[derive(Debug, Default)]
struct Held {
    first: Option<Signal>,
    child: Option<u32>,
}

impl SignalEnd {
    /// The run's coordinator heard `signal` first: it ends the run, and its words and code are the run's.
    pub(crate) fn ended_by(&self, signal: Signal) {
        let _ = self.by.set(signal);
    }

    /// From now on a signal is kept, not acted on (`--start`: the server is stopped first, and
    /// the run then exits with the first signal's code).
    pub(crate) fn hold(&self) {
        lock(&self.held).get_or_insert_with(Held::default);
    }

    /// While [`SignalEnd::hold`] holds: the signals that come are passed on to the process
    /// `child` (`-- CMD`, run as a child under `--start`), or to none.
    pub(crate) fn pass_to(&self, child: Option<u32>) {
        let mut held = lock(&self.held);
        let held = held.get_or_insert_with(Held::default);
        held.child = child;
        // One that came while the child was being started is its too.
        if let (Some(pid), Some(signal)) = (child, held.first) {
            pass_on(pid, signal);
        }
    }

    /// The first signal that came while held, if any.
    pub(crate) fn held(&self) -> Option<Signal> {
        lock(&self.held).as_ref().and_then(|held| held.first)
    }

    /// Takes the last word; `false` when it was taken already.
    pub(crate) fn speak(&self) -> bool {
        !self.spoken.swap(true, Ordering::SeqCst)
    }

    /// `signal` came once the coordinator stopped listening, while the
    /// ending is being written. After a run that a first signal ended, the
    /// first signal decides: the ending finishes in its words and with its
    /// code, or, still unfinished after [`SECOND_SIGNAL_GRACE`], the process
    /// ends here with them. Otherwise `signal` ends the process at once, in
    /// its own words and with its own code. Returns only when the ending spoke.
    pub(crate) fn late(&self, signal: Signal) {
        if let Some(held) = lock(&self.held).as_mut() {
            held.first.get_or_insert(signal);
            if let Some(pid) = held.child {
                pass_on(pid, signal);
            }
            return;
        }
        let first = match self.by.get() {
            Some(&first) => {
                let until = Instant::now() + SECOND_SIGNAL_GRACE;
                while Instant::now() < until {
                    if self.spoken.load(Ordering::SeqCst) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                if !self.speak() {
                    return;
                }
                first
            }
            None => {
                let _ = self.speak();
                signal
            }
        };
        let error = Error::signalled(first, 0);
        eprintln!("poll: error: {} while the run's output was written", error.kind().row().words);
        std::process::exit(i32::from(error.exit_code()));
    }
}

/// Calls `on_signal` on a thread of its own for every SIGINT, SIGTERM and
/// SIGHUP (a closed terminal; some CI runners send it on cancel).
///
/// A signal ignored when poll started (`nohup`, a shell's `trap '' HUP`, the
/// SIGINT of a job a script put in the background) is left ignored, as shells
/// leave it: poll goes on through it, and `-- CMD` inherits it ignored, where
/// exec would have reset a caught one to its default.
#[cfg(unix)]
pub(crate) fn listen(on_signal: impl Fn(Signal) + Send + Sync + 'static) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let ignored = ignored_at_start();
    let caught: Vec<i32> = [SIGINT, SIGTERM, SIGHUP].into_iter().filter(|&signal| !ignored(signal)).collect();
    if caught.is_empty() {
        return Ok(());
    }
    let mut incoming = signal_hook::iterator::Signals::new(caught)?;
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for number in incoming.forever() {
            on_signal(match number {
                SIGTERM => Signal::Terminate,
                SIGHUP => Signal::HangUp,
                _ => Signal::Interrupt,
            });
        }
    })?;
    Ok(())
}

/// Passes `signal` on to the process `pid` (`-- CMD` under `--start`), as `timeout` and
/// `sudo` pass on what they are sent.
#[cfg(unix)]
fn pass_on(pid: u32, signal: Signal) {
    use nix::sys::signal::Signal as Nix;
    let number = match signal {
        Signal::Interrupt => Nix::SIGINT,
        Signal::Terminate => Nix::SIGTERM,
        Signal::HangUp => Nix::SIGHUP,
    };
    if let Ok(pid) = i32::try_from(pid) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), number);
    }
}

/// Windows: the command shares poll's console, which sends it Ctrl-C and Ctrl-Break itself.
#[cfg(windows)]
fn pass_on(_: u32, _: Signal) {}

/// Which signals this process started with ignored, read from Linux's
/// `/proc/self/status` (`SigIgn`, a bit per signal). Asking the kernel with
/// sigaction is nix's unsafe call, and this crate forbids unsafe code.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn ignored_at_start() -> impl Fn(i32) -> bool {
    let mask = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| ignored_mask(&status));
    move |signal| mask.is_some_and(|mask| (1..=64).contains(&signal) && mask >> (signal - 1) & 1 == 1)
}

/// Elsewhere no safe call says it: every signal is caught, as before.
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
fn ignored_at_start() -> impl Fn(i32) -> bool {
    |_| false
}

/// The `SigIgn:` mask of a `/proc/PID/status` text (hexadecimal, signal 1 in bit 0).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn ignored_mask(status: &str) -> Option<u64> {
    let mask = status.lines().find_map(|line| line.strip_prefix("SigIgn:"))?;
    u64::from_str_radix(mask.trim(), 16).ok()
}

/// Windows: Ctrl-C (130) through ctrlc, whose handler wakes a thread of its
/// own but is not told which console event came; Ctrl-Break (143) through
/// the C runtime's `SIGBREAK`, whose handler (signal-hook's, safe) may only
/// set a flag, which [`forward`] turns into a call.
///
/// Windows asks console handlers last-registered first, and the first that
/// says "handled" ends the chain. The C runtime adds its own handler on the
/// first `signal(SIGINT | SIGBREAK, ..)`, here after ctrlc's, so it is asked
/// first: it maps Ctrl-C to `SIGINT`, which has no handler, so it passes
/// Ctrl-C on to ctrlc; and every other event to `SIGBREAK`, which it handles
/// (ucrt's and msvcrt's `ctrlevent_capture`). A closed console comes as
/// `SIGBREAK` too, but Windows ends the process as soon as a handler returns
/// from that event, so no line is written for it, as before.
#[cfg(windows)]
pub(crate) fn listen(on_signal: impl Fn(Signal) + Send + Sync + 'static) -> std::io::Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let on_signal = Arc::new(on_signal);
    let on_ctrl_c = Arc::clone(&on_signal);
    ctrlc::set_handler(move || on_ctrl_c(Signal::Interrupt)).map_err(|e| match e {
        ctrlc::Error::System(e) => e,
        other => std::io::Error::other(other.to_string()),
    })?;
    let broke = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGBREAK, Arc::clone(&broke))?;
    forward(broke, move || on_signal(Signal::Terminate))
}

/// How often [`forward`] looks at its flag: well within the 100 ms in which a
/// signal must end a run, and 40 wake-ups a second of one thread.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(25);

/// Calls `then` on a thread of its own each time `flag` is found set (and
/// clears it), looking every [`LOOK_EVERY`]: a C runtime's signal handler
/// may set a flag, but wakes no thread, and a safe one can do nothing else.
#[cfg_attr(unix, allow(dead_code, reason = "only Windows' Ctrl-Break comes as a flag"))]
fn forward(
    flag: std::sync::Arc<std::sync::atomic::AtomicBool>,
    then: impl Fn() + Send + 'static,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("signal-flag".into()).spawn(move || {
        loop {
            std::thread::sleep(LOOK_EVERY);
            if flag.swap(false, std::sync::atomic::Ordering::SeqCst) {
                then();
            }
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[cfg(any(target_os = "linux", target_os = "android"))]
    #[test]
    fn the_ignored_signals_are_read_from_proc() {
        let status = "Name:\tpoll\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000001003\nSigCgt:\t0\n";
        assert_eq!(ignored_mask(status), Some(0x1003));
        assert_eq!(ignored_mask("SigIgn:\tnot hex\n"), None);
        assert_eq!(ignored_mask("Name:\tpoll\n"), None);
        // Rust's runtime ignores SIGPIPE (13) in every test process; SIGTERM (15) is not ignored.
        let ignored = ignored_at_start();
        assert!(ignored(signal_hook::consts::SIGPIPE) && !ignored(signal_hook::consts::SIGTERM));
        assert!(!ignored(0) && !ignored(65));
    }

    /// Ctrl-Break's flag (Windows) becomes one call within the contract's 100 ms, once per setting.
    #[test]
    fn a_flag_set_by_a_signal_handler_is_forwarded_within_100_ms() {
        let flag = Arc::new(AtomicBool::new(false));
        let (calls, called) = mpsc::channel();
        let sent = move || {
            let _ = calls.send(Instant::now());
        };
        assert!(forward(Arc::clone(&flag), sent).is_ok());
        assert!(called.recv_timeout(Duration::from_millis(200)).is_err(), "nothing before the flag");
        for _ in 0..2 {
            let set = Instant::now();
            flag.store(true, Ordering::SeqCst);
            let Ok(at) = called.recv_timeout(Duration::from_secs(5)) else { panic!("the flag was not forwarded") };
            assert!(at.duration_since(set) < Duration::from_millis(100), "{:?}", at.duration_since(set));
            assert!(called.recv_timeout(Duration::from_millis(100)).is_err(), "one call for one signal");
        }
    }
}

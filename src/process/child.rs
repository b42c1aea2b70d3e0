//! The commands `poll` runs (`--auth-cmd`): through the platform's shell
//! (`sh -c` on Unix, `cmd /C` on Windows), in a process group of their own,
//! with no stdin, their output read to its end, bounded in time and in size
//! (16 MiB, through the one bounded reader of local inputs), and ended with
//! everything they started when the time is up or the run ends, or at once
//! when the terminal stops them for using it (a prompt nobody can answer).

use std::io::Read;
use std::process::{ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use crate::process::shell::{SHELL, shell};
use crate::util::sync::lock;
use std::time::{Duration, Instant};

use crate::util::file;
use crate::util::wait::{Cancel, Cancelled};

/// How long after the command exited its output is still read from what it left running.
const DRAIN: Duration = Duration::from_millis(100);

/// The commands running now, by their process id (on Unix, their process group's).
static RUNNING: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// A command known to [`end_all`] while it runs.
struct Running(u32);

impl Running {
    fn register(id: u32) -> Running {
        lock(&RUNNING).push(id);
        Running(id)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        lock(&RUNNING).retain(|id| *id != self.0);
    }
}

/// The run is over (a signal, the deadline, an ending): every command still
/// running is ended with everything it started, so none outlives `poll`.
pub(crate) fn end_all() {
    for id in lock(&RUNNING).drain(..) {
        platform::kill_id(id);
    }
}

/// What a finished command left.
pub(crate) struct Output {
    /// "exit status 0" and the like.
    pub status: String,
    pub success: bool,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// Why a command was ended before it finished (it was killed first), or never ran.
pub(crate) enum Stopped {
    /// The run ended.
    Cancelled,
    /// `deadline` passed.
    Deadline,
    /// It ran longer than its `limit`; what it wrote on stderr so far.
    TooLong { stderr: Vec<u8> },
    /// It printed more than a local read may hold ([`file::MAX_READ`]) on
    /// this stream (`stdout`, `stderr`); what it printed is never shown.
    TooLarge(&'static str),
    /// It could not be started or waited for.
    Failed(String),
    /// It was stopped for using the terminal, which a process group of its
    /// own may not (SIGTTIN, SIGTTOU: a prompt), and would wait forever: what
    /// it tried, in words, and the signal that stopped it.
    AtTerminal { tried: &'static str, by: &'static str },
}

/// What a look at a running command found.
enum Waited {
    Running,
    Exited(ExitStatus),
    /// Stopped by the terminal ([`Stopped::AtTerminal`]).
    #[cfg_attr(windows, allow(dead_code, reason = "Windows has no terminal stops"))]
    AtTerminal {
        tried: &'static str,
        by: &'static str,
    },
}

/// When a command must be over: its own `limit`, the run's `deadline`, the run's end.
pub(crate) struct Bounds<'a> {
    pub limit: Duration,
    pub deadline: Option<Instant>,
    pub cancel: &'a Cancel,
}

/// Runs `command` through the shell with `env` added to its environment.
pub(crate) fn run(command: &str, env: &[(&str, &str)], bounds: &Bounds) -> Result<Output, Stopped> {
    let mut shell = shell(command);
    shell.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    for (name, value) in env {
        shell.env(name, value);
    }
    let mut child = shell.spawn().map_err(|e| Stopped::Failed(format!("cannot run {}: {e}", SHELL)))?;
    // Known to the run's ending until it is over, which kills it (and its group) should the run end first.
    let _running = Running::register(child.id());
    let started = Instant::now();
    let mut exited_at = None;
    let (closed_tx, closed) = mpsc::channel();
    let stdout = read_all(child.stdout.take(), closed_tx.clone());
    let stderr = read_all(child.stderr.take(), closed_tx);
    let mut open = 2;
    let mut status = None;
    let stopped = loop {
        if open == 0 && status.is_some() {
            break None;
        }
        if bounds.cancel.check().is_err() {
            break Some(Stopped::Cancelled);
        }
        if started.elapsed() >= bounds.limit {
            break Some(Stopped::TooLong { stderr: Vec::new() });
        }
        if bounds.deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            break Some(Stopped::Deadline);
        }
        if let Some((name, _)) = [("stdout", &stdout), ("stderr", &stderr)].iter().find(|(_, s)| lock(s).too_large) {
            break Some(Stopped::TooLarge(name));
        }
        if status.is_none() {
            let waited = platform::try_wait(&mut child);
            match waited.map_err(|e| Stopped::Failed(format!("cannot wait for {}: {e}", SHELL)))? {
                Waited::Running => {}
                Waited::Exited(exit) => status = Some(exit),
                // Nothing will answer it: said at once rather than at the limit or the deadline.
                Waited::AtTerminal { tried, by } => break Some(Stopped::AtTerminal { tried, by }),
            }
        }
        // The command is over: what a child it left in the background (`TOKEN; sleep 300 &`) holds open is
        // not waited for, beyond a moment for the output already written to be read.
        if status.is_some() && open > 0 && exited_at.get_or_insert_with(Instant::now).elapsed() >= DRAIN {
            platform::kill(&mut child);
            break None;
        }
        if open > 0 {
            // Each stream says when it is closed; the step bounds how late a cancel or the limit is seen.
            if closed.recv_timeout(Duration::from_millis(10)).is_ok() {
                open -= 1;
            }
        } else if let Err(Cancelled) = bounds.cancel.sleep(Duration::from_millis(1)) {
            break Some(Stopped::Cancelled);
        }
    };
    if let Some(stopped) = stopped {
        platform::kill(&mut child);
        let _ = child.wait();
        return Err(match stopped {
            Stopped::TooLong { .. } => Stopped::TooLong { stderr: std::mem::take(&mut lock(&stderr).bytes) },
            other => other,
        });
    }
    let success = status.is_some_and(|status| status.success());
    let status = status.map_or_else(|| "no exit status".to_string(), |status| describe(&status));
    let stdout = std::mem::take(&mut lock(&stdout).bytes);
    let stderr = std::mem::take(&mut lock(&stderr).bytes);
    Ok(Output { status, success, stdout, stderr })
}

/// The command's exit in words: `exit status 7`, `killed by signal 9`.
fn describe(status: &ExitStatus) -> String {
    match (status.code(), platform::signal(status)) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "no exit status".to_string(),
    }
}

/// What a command printed on one stream so far.
#[derive(Default)]
struct Printed {
    bytes: Vec<u8>,
    /// More than [`file::MAX_READ`] came: reading stopped there.
    too_large: bool,
}

/// Reads `stream` to its end on a thread of its own, into the buffer
/// returned, through the one bounded reader of local inputs
/// ([`file::AtMost`]); says on `closed` when it is done.
fn read_all(stream: Option<impl Read + Send + 'static>, closed: mpsc::Sender<()>) -> Arc<Mutex<Printed>> {
    let printed = Arc::new(Mutex::new(Printed::default()));
    let filled = Arc::clone(&printed);
    let reader = move || {
        if let Some(stream) = stream {
            let mut stream = file::AtMost::new(stream);
            let mut chunk = [0u8; 8192];
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => lock(&filled).bytes.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        lock(&filled).too_large = e.kind() == std::io::ErrorKind::FileTooLarge;
                        break;
                    }
                }
            }
        }
        let _ = closed.send(());
    };
    if std::thread::Builder::new().name("child-output".into()).spawn(reader).is_err() {
        // No thread: nothing is read, and the command's own limit ends it.
    }
    printed
}

#[cfg(unix)]
mod platform {
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::{Child, ExitStatus};

    use nix::sys::signal::Signal;
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::Pid;

    use super::Waited;

    /// Whether the command is over, or stopped by the terminal: waitpid with
    /// WUNTRACED, which std's `try_wait` does not ask. It reaps the command
    /// once over, so std's `Child` is never asked again, nor sent a signal
    /// by pid ([`kill`] signals the group).
    pub(super) fn try_wait(child: &mut Child) -> std::io::Result<Waited> {
        let pid = Pid::from_raw(i32::try_from(child.id()).map_err(std::io::Error::other)?);
        Ok(match waitpid(pid, Some(WaitPidFlag::WNOHANG | WaitPidFlag::WUNTRACED))? {
            // The status in the form wait(2) gives it, which `ExitStatus` holds.
            WaitStatus::Exited(_, code) => Waited::Exited(ExitStatus::from_raw((code & 0xff) << 8)),
            WaitStatus::Signaled(_, signal, core) => {
                Waited::Exited(ExitStatus::from_raw(signal as i32 | if core { 0x80 } else { 0 }))
            }
            WaitStatus::Stopped(_, Signal::SIGTTIN) => Waited::AtTerminal { tried: "read the terminal", by: "SIGTTIN" },
            WaitStatus::Stopped(_, Signal::SIGTTOU) => {
                Waited::AtTerminal { tried: "write to the terminal or change its settings", by: "SIGTTOU" }
            }
            // Still running, or stopped by someone else (SIGSTOP), who may go on with it.
            _ => Waited::Running,
        })
    }

    /// Kills the command's process group (`sh` and everything it started).
    /// Never by its pid: [`try_wait`] may have reaped it, and the pid be another's by now.
    pub(super) fn kill(child: &mut Child) {
        let _ = kill_group(child.id());
    }

    /// Kills the process group of the command whose process is `id` (its group's id too).
    pub(super) fn kill_id(id: u32) {
        let _ = kill_group(id);
    }

    /// SIGKILL to the process group whose leader is `id`.
    fn kill_group(id: u32) -> nix::Result<()> {
        let group = i32::try_from(id).map_err(|_| nix::errno::Errno::ESRCH)?;
        nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), nix::sys::signal::Signal::SIGKILL)
    }

    pub(super) fn signal(status: &ExitStatus) -> Option<i32> {
        status.signal()
    }
}

#[cfg(windows)]
mod platform {
    use std::process::{Child, Command, ExitStatus, Stdio};

    /// Whether the command is over: std's own look (Windows has no terminal stops).
    pub(super) fn try_wait(child: &mut Child) -> std::io::Result<super::Waited> {
        Ok(child.try_wait()?.map_or(super::Waited::Running, super::Waited::Exited))
    }

    /// Ends cmd and every process it started (`taskkill /T /F`, Windows'
    /// own tool, which finds them by parent), then cmd itself for certain
    /// (`TerminateProcess`), should taskkill be missing or fail. A Job object
    /// would do both in one, but takes unsafe code or the `windows` crate.
    pub(super) fn kill(child: &mut Child) {
        kill_id(child.id());
        let _ = child.kill();
    }

    fn taskkill() -> std::path::PathBuf {
        std::env::var_os("SystemRoot")
            .map_or_else(|| "taskkill.exe".into(), |root| std::path::Path::new(&root).join(r"System32\taskkill.exe"))
    }

    /// Ends the command whose process is `id` and what it started.
    pub(super) fn kill_id(id: u32) {
        let _ = Command::new(taskkill())
            .args(["/T", "/F", "/PID", &id.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }

    pub(super) fn signal(_: &ExitStatus) -> Option<i32> {
        None
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Unix waits with its own waitpid (to see terminal stops): the exit it reads is said as std said it.
    #[test]
    fn an_exit_or_a_killing_signal_is_said_as_before() {
        let cancel = Cancel::default();
        let bounds = Bounds { limit: Duration::from_secs(10), deadline: None, cancel: &cancel };
        let said = |command: &str| run(command, &[], &bounds).map(|out| (out.status, out.success, out.stdout));
        assert!(
            matches!(said("echo token"), Ok((status, true, out)) if status == "exit status 0" && out == b"token\n")
        );
        assert!(matches!(said("exit 7"), Ok((status, false, _)) if status == "exit status 7"));
        assert!(matches!(said("kill -KILL $$"), Ok((status, false, _)) if status == "killed by signal 9"));
    }
}

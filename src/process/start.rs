//! `--start CMD`: the server command a run starts, waits for and stops. It runs through the
//! platform's shell (`sh -c`; Windows `cmd /D /S /C`) with no stdin, its stdout and stderr on
//! poll's stderr, in a group of its own: on Unix a process group (a terminal's Ctrl-C does not
//! reach it; `killpg` reaches what it started), on Windows a job object (win32job: the crate
//! forbids unsafe code of ours; `taskkill /T` finds children by parent, which Wine's lacks).
//! [`Started::stop`] sends the group SIGTERM (Windows: ends the job), then SIGKILL after the
//! grace, and returns once no process of it is alive: a zombie counts as gone, and a process
//! that left the group (`setsid`, a daemon) is not seen.

use std::process::{Child, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::process::shell::shell;
use crate::util::sync::lock;

/// How often the group is looked at while it is being stopped.
const LOOK_EVERY: Duration = Duration::from_millis(10);

/// How long the group may take to be gone after SIGKILL: only a process stuck in the kernel
/// (uninterruptible I/O) takes longer, and poll does not wait for it forever.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// How the started command ended: its exit status, or the signal that ended it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    Code(i32),
    Signal(i32),
}

impl Exit {
    /// How a process ended, from its status: a signal's number where one ended it.
    pub(crate) fn of(status: &std::process::ExitStatus) -> Exit {
        match (status.code(), platform::signal(status)) {
            (_, Some(signal)) => Exit::Signal(signal),
            (Some(code), None) => Exit::Code(code),
            (None, None) => Exit::Code(1),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "status {code}"),
            Exit::Signal(signal) => write!(f, "signal {signal} ({})", signal_name(*signal)),
        }
    }
}

/// What stopped it: it had ended by itself, SIGTERM, or SIGKILL after the grace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoppedBy {
    Exited,
    Sigterm,
    Sigkill,
}

impl StoppedBy {
    /// The JSON log's word: `exited`, `sigterm`, `sigkill`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            StoppedBy::Exited => "exited",
            StoppedBy::Sigterm => "sigterm",
            StoppedBy::Sigkill => "sigkill",
        }
    }
}

/// A started command, the leader of its group.
pub(crate) struct Started {
    child: Mutex<Child>,
    pid: u32,
    /// Its exit, once seen (the child is reaped then).
    exit: Mutex<Option<Exit>>,
    group: platform::Group,
}

impl Started {
    /// Starts `command` through the shell, in a group of its own, its output on poll's stderr.
    pub(crate) fn spawn(command: &str) -> std::io::Result<Started> {
        let mut shell = shell(command);
        shell.stdin(Stdio::null()).stdout(platform::stderr()?).stderr(Stdio::inherit());
        let child = shell.spawn()?;
        let pid = child.id();
        let group = platform::Group::of(&child)?;
        Ok(Started { child: Mutex::new(child), pid, exit: Mutex::new(None), group })
    }

    /// The process poll started (on Unix the group's leader, whose id is the group's).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Its exit, if it has exited: looked at now, without waiting.
    pub(crate) fn exited(&self) -> Option<Exit> {
        let mut exit = lock(&self.exit);
        if exit.is_none()
            && let Ok(Some(status)) = lock(&self.child).try_wait()
        {
            *exit = Some(Exit::of(&status));
        }
        *exit
    }

    /// Stops the whole group: SIGTERM, then SIGKILL after `grace` (Windows: the job is ended),
    /// and waits until none of it is alive. What stopped it, and how its own process ended.
    pub(crate) fn stop(&self, grace: Duration) -> (StoppedBy, Option<Exit>) {
        let alive = || {
            let _ = self.exited();
            self.group.alive(self.pid)
        };
        if !alive() {
            return (StoppedBy::Exited, self.exited());
        }
        let by_itself = self.exited().is_some();
        self.group.terminate(self.pid);
        if gone_within(grace, alive) {
            // The command had ended; what it left in its group was stopped.
            let by = if by_itself { StoppedBy::Exited } else { StoppedBy::Sigterm };
            return (by, self.exited());
        }
        self.group.kill(self.pid);
        let _ = gone_within(AFTER_KILL, alive);
        (StoppedBy::Sigkill, self.exited())
    }
}

/// Whether `alive` turns false within `limit`, looked at every [`LOOK_EVERY`].
fn gone_within(limit: Duration, alive: impl Fn() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if !alive() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

/// A signal's name, for messages: `SIGSEGV`.
fn signal_name(signal: i32) -> &'static str {
    match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        _ => "a signal",
    }
}

#[cfg(unix)]
mod platform {
    use std::os::fd::AsFd as _;
    use std::os::unix::process::ExitStatusExt as _;
    use std::process::{Child, ExitStatus, Stdio};

    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;

    /// poll's stderr, for the command's stdout.
    pub(super) fn stderr() -> std::io::Result<Stdio> {
        Ok(Stdio::from(std::io::stderr().as_fd().try_clone_to_owned()?))
    }

    pub(super) fn signal(status: &ExitStatus) -> Option<i32> {
        status.signal()
    }

    /// The process group whose leader poll started: its id is the leader's.
    pub(super) struct Group;

    impl Group {
        pub(super) fn of(_: &Child) -> std::io::Result<Group> {
            Ok(Group)
        }

        pub(super) fn terminate(&self, pid: u32) {
            send(pid, Signal::SIGTERM);
        }

        pub(super) fn kill(&self, pid: u32) {
            send(pid, Signal::SIGKILL);
        }

        /// Whether a process of group `pid` is alive: on Linux one of `/proc` in the group
        /// and not a zombie (a parent that does not reap, such as an init that is no init,
        /// would keep a zombie forever); elsewhere whether the group can be signalled.
        pub(super) fn alive(&self, pid: u32) -> bool {
            match std::fs::read_dir("/proc") {
                Ok(entries) if cfg!(any(target_os = "linux", target_os = "android")) => entries
                    .flatten()
                    .filter_map(|entry| std::fs::read_to_string(entry.path().join("stat")).ok())
                    .any(|stat| in_group_alive(&stat, pid)),
                _ => {
                    let group = i32::try_from(pid).map(Pid::from_raw);
                    group.is_ok_and(|group| killpg(group, None).is_ok())
                }
            }
        }
    }

    /// Whether a `/proc/PID/stat` line is of a live process (not a zombie) of group `pid`:
    /// after the command's name in parentheses come the state and the parent, then the group.
    pub(super) fn in_group_alive(stat: &str, pid: u32) -> bool {
        let Some((_, after)) = stat.rsplit_once(')') else { return false };
        let mut fields = after.split_whitespace();
        let (state, _parent, group) = (fields.next(), fields.next(), fields.next());
        state.is_some_and(|state| state != "Z" && state != "X") && group == Some(pid.to_string().as_str())
    }

    fn send(pid: u32, signal: Signal) {
        if let Ok(group) = i32::try_from(pid) {
            let _ = killpg(Pid::from_raw(group), signal);
        }
    }
}

#[cfg(windows)]
mod platform {
    use std::os::windows::io::{AsHandle as _, AsRawHandle as _};
    use std::process::{Child, ExitStatus, Stdio};

    use win32job::{ExtendedLimitInfo, Job};

    use crate::util::sync::lock;

    /// poll's stderr, for the command's stdout.
    pub(super) fn stderr() -> std::io::Result<Stdio> {
        Ok(Stdio::from(std::io::stderr().as_handle().try_clone_to_owned()?))
    }

    pub(super) fn signal(_: &ExitStatus) -> Option<i32> {
        None
    }

    /// The job object of the command and everything it starts (a process cmd starts joins its
    /// job), ended as one when its handle closes (`JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`): that
    /// is the stop, and also what ends it should poll itself be killed.
    pub(super) struct Group(std::sync::Mutex<Option<Job>>);

    impl Group {
        pub(super) fn of(child: &Child) -> std::io::Result<Group> {
            let mut limits = ExtendedLimitInfo::new();
            limits.limit_kill_on_job_close();
            let job = Job::create_with_limit_info(&limits).map_err(std::io::Error::other)?;
            // A handle is a pointer-sized value; the crate takes it as one.
            job.assign_process(child.as_raw_handle() as isize).map_err(std::io::Error::other)?;
            Ok(Group(std::sync::Mutex::new(Some(job))))
        }

        /// Windows has no SIGTERM: the job is ended at once.
        pub(super) fn terminate(&self, _: u32) {
            lock(&self.0).take();
        }

        pub(super) fn kill(&self, pid: u32) {
            self.terminate(pid);
        }

        /// Whether a process of the job is alive (none once it is ended).
        pub(super) fn alive(&self, _: u32) -> bool {
            lock(&self.0).as_ref().is_some_and(|job| job.query_process_id_list().is_ok_and(|ids| !ids.is_empty()))
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_proc_stat_line_says_group_and_zombie() {
        assert!(platform::in_group_alive("4242 (sh) S 1 4242 4242 0 -1", 4242));
        assert!(!platform::in_group_alive("4242 (sh) Z 1 4242 4242 0 -1", 4242));
        assert!(!platform::in_group_alive("4243 (sleep) S 4242 4000 4000 0 -1", 4242));
        // A name with spaces and parentheses: the last `)` ends it.
        assert!(platform::in_group_alive("77 (a) b (c)) R 1 4242 4242", 4242));
    }

    #[test]
    fn the_group_is_stopped_with_what_it_started() {
        let Ok(started) = Started::spawn("sleep 30 & sleep 30") else { panic!("sh starts") };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(started.exited(), None);
        let (by, exit) = started.stop(Duration::from_secs(5));
        assert_eq!((by, exit), (StoppedBy::Sigterm, Some(Exit::Signal(15))));
        assert!(!started.group.alive(started.pid()));
        let Ok(stubborn) = Started::spawn("trap '' TERM; sleep 30") else { panic!("sh starts") };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(stubborn.stop(Duration::from_millis(200)).0, StoppedBy::Sigkill);
        let Ok(quick) = Started::spawn("exit 3") else { panic!("sh starts") };
        assert!(gone_within(Duration::from_secs(5), || quick.exited().is_none()));
        assert_eq!(quick.stop(Duration::from_secs(1)), (StoppedBy::Exited, Some(Exit::Code(3))));
    }
}

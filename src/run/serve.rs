//! `--start`'s server, from before it starts to its stop, as Playwright's `webServer` and
//! start-server-and-test run one: a target that answers before it starts is another
//! server's ([`free`]); then it starts in a group of its own (`process/start.rs`), and is
//! watched while the run waits, so that an exit, any exit, ends the run within
//! [`WATCH_EVERY`] instead of at the deadline; whatever ends the run, its whole group is
//! stopped ([`Server::stop`]), and `-v` says when it started, answered and how it stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use crate::cli::config::{Start, Target};
use crate::error::{Error, Kind};
use crate::net::probe::{self, Knocked};
use crate::process::start::{Exit, Started, StoppedBy};
use crate::report::reporter::Reporter;
use crate::report::result::StartEnd;
use crate::util::text::{human, printable};
use crate::util::url::Endpoint;

/// How often the started command is looked at while the run waits: well within the 100 ms
/// in which its exit must end the run.
pub(super) const WATCH_EVERY: Duration = Duration::from_millis(10);

/// The started server.
pub(crate) struct Server {
    started: Started,
    /// The command as given, for messages.
    command: String,
    grace: Duration,
    began: Instant,
    /// The run still waits for the targets: an exit is news.
    watching: AtomicBool,
}

/// Before anything starts: one connection to each target (an `http(s)://` one at its host and
/// port, or `--unix-socket`), within `connect`. One that opens is another server's, which
/// the run would test instead of the one it starts (Playwright's default): exit 3, the
/// failure of that target (its index).
pub(super) fn free(
    targets: &[Target],
    unix_socket: Option<&std::path::Path>,
    connect: Duration,
) -> Result<(), (usize, Error)> {
    for (t, target) in targets.iter().enumerate() {
        let endpoint = match (&target.endpoint, unix_socket) {
            (Some(endpoint), _) => Some(endpoint.clone()),
            (None, Some(path)) => Some(Endpoint::Unix(path.to_path_buf())),
            (None, None) => {
                crate::util::url::host_port(&target.request.url).map(|(host, port)| Endpoint::Tcp { host, port })
            }
        };
        let Some(endpoint) = endpoint else { continue };
        if probe::knock(&endpoint, connect).knocked == Knocked::Open {
            let what = format!("{} already answers before --start ran: another server holds it", target.shown);
            let hint =
                format!(" ({} accepted a connection); stop it, or wait for it without --start", endpoint.address());
            return Err((t, Error::permanent(what).hint(hint)));
        }
    }
    Ok(())
}

impl Server {
    /// Starts `start`'s command; `-v` says so.
    pub(super) fn launch(start: &Start, reporter: &Reporter) -> Result<Arc<Server>, Error> {
        let started = Started::spawn(&start.command)
            .map_err(|e| Error::permanent(format!("--start: cannot start `{}`: {e}", printable(&start.command))))?;
        reporter.note(&format!("--start: `{}` started (pid {})", printable(&start.command), started.pid()));
        Ok(Arc::new(Server {
            started,
            command: start.command.clone(),
            grace: start.grace,
            began: Instant::now(),
            watching: AtomicBool::new(true),
        }))
    }

    /// Watches the command on a thread of its own while the run waits: its exit is sent
    /// (`heard`) as soon as it is seen.
    pub(super) fn watch<T: Send + 'static>(
        self: &Arc<Server>,
        tell: Sender<T>,
        heard: impl Fn(Exit) -> T + Send + 'static,
    ) -> std::io::Result<()> {
        let server = Arc::clone(self);
        std::thread::Builder::new().name("start-watch".into()).spawn(move || {
            while server.watching.load(Ordering::SeqCst) {
                if let Some(exit) = server.started.exited() {
                    let _ = tell.send(heard(exit));
                    return;
                }
                std::thread::sleep(WATCH_EVERY);
            }
        })?;
        Ok(())
    }

    /// The run no longer waits: the targets answered (which `-v` says), or it ended otherwise.
    pub(super) fn waited(&self, answered: bool, reporter: &Reporter) {
        self.watching.store(false, Ordering::SeqCst);
        if answered {
            reporter.note(&format!("--start: the targets answered {} after it started", human(self.began.elapsed())));
        }
    }

    /// The error of a command that exited (`exit`) before `pending` (the targets not yet up) answered.
    pub(super) fn exited_early(&self, exit: Exit, pending: &str) -> Error {
        let how = match exit {
            Exit::Code(_) => format!("exited with {exit}"),
            Exit::Signal(_) => format!("was ended by {exit}"),
        };
        let error = Error::new(Kind::StartExited, format!("the server command {how} before {pending} answered"));
        match exit {
            // It went into the background, or did its work and left: either way nothing is left to wait for.
            Exit::Code(0) => error.hint(
                "; --start's command must stay in the foreground: give a daemonizing server its foreground flag \
                 (nginx -g 'daemon off;', redis-server --daemonize no)",
            ),
            _ => error,
        }
    }

    /// Stops its whole group (SIGTERM, then SIGKILL after the grace) and says so under `-v`.
    pub(super) fn stop(&self, reporter: &Reporter) -> StartEnd {
        self.watching.store(false, Ordering::SeqCst);
        let stopping = Instant::now();
        let (stopped_by, exit) = self.started.stop(self.grace);
        let pid = self.started.pid();
        let exit_words = exit.map_or_else(|| "still not gone".to_string(), |exit| exit.to_string());
        let line = match stopped_by {
            StoppedBy::Exited => format!("--start: `{}` had exited ({exit_words})", printable(&self.command)),
            StoppedBy::Sigterm => {
                format!("--start: stopped by SIGTERM in {} (pid {pid}: {exit_words})", human(stopping.elapsed()))
            }
            StoppedBy::Sigkill => {
                format!("--start: stopped by SIGKILL after the {} grace (pid {pid}: {exit_words})", human(self.grace))
            }
        };
        reporter.note(&line);
        StartEnd { pid, exit, stopped_by }
    }
}

//! The top floor: the run's coordinator here, each URL's loop (`target`, and
//! `--watch`'s attempt in `watch`), and the one place a run ends (`ending`).
//!
//! One loop per URL runs on a thread of its own. Everything that can end the
//! run arrives on one channel: a loop's ending or a signal; the deadline is
//! the channel's receive timeout, so no thread keeps an eye on the clock.

mod ending;
mod explain;
mod port;
mod serve;
pub(crate) mod target;
mod walk;
mod watch;

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

pub use crate::run::ending::{Closed, Ending, HandedOver};

use crate::cli::config::{self, Config, Fallback, StateSpec};
use crate::error::{Error, Signal};
use crate::process::start::Exit;
use crate::process::{child, signals};
use crate::report::progress::{LoopProgress, Progress};
use crate::report::reporter::Reporter;
use crate::report::result::UrlResult;
use crate::run::ending::{Finale, Over, stopped_early};
use crate::run::serve::Server;
use crate::run::target::Common;
use crate::state::{FileStore, RedisStore, Shared, Store};
use crate::util::stack;
use crate::util::wait::{Cancel, Cancelled};

/// How long after the deadline an attempt still in flight is abandoned; a
/// request's own timeout ends it at the deadline, so only a jq filter that
/// never finishes is still running then.
const DEADLINE_GRACE: Duration = Duration::from_millis(250);

/// The stack of the thread that configures and ends the run (`main.rs`):
/// jaq parses filters recursively, and this holds the longest filter that
/// passes the length and nesting limits (see `condition.rs`). One thread:
/// it is reserved, not used, and untouched pages cost no memory.
pub const STACK_SIZE: usize = 256 << 20;

/// How much of [`STACK_SIZE`] a filter evaluated there (`--print` on a `--fallback` body) may
/// spend before its recursion is too deep: the deepest filter's terms and a loop's recursion,
/// with room to spare; the rest is kept, so that a runaway recursion touches no more than this.
const MAIN_EVALUATION: usize = 64 << 20;

/// Starts `work` on a thread of [`STACK_SIZE`], as the run's own thread (`main.rs`) and the
/// fuzz target's worker are, whose filters find their recursion too deep, never the stack's end.
pub fn spawn_on_a_large_stack<T: Send + 'static>(
    name: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<T>> {
    let builder = std::thread::Builder::new().name(name.to_string());
    stack::spawn(builder, STACK_SIZE, STACK_SIZE - MAIN_EVALUATION, work)
}

/// The stack of each URL's loop, which evaluates the filters, and the reserve
/// at its bottom that a recursion stops short of ("recursion too deep", see
/// `rules/jq/natives.rs`): the loop's own frames (its request's), and for each
/// level its deepest filter nests, twice what jaq's recursive evaluation
/// spends on a level in a debug build (docs/BENCHMARKS.md). A thousand URLs
/// under plain filters reserve 2 GiB of address space, which `ulimit -v
/// 4194304` allows. A filter that defines something that can call itself
/// gets 16 MiB more for its recursion, and a reserve for what runs below
/// the point that finds the stack low (the rest of one definition's terms,
/// natives, the error's way back).
fn loop_stack(filter_depth: usize, recursion: bool) -> (usize, usize) {
    const FRAMES: usize = 2 << 20;
    const PER_LEVEL: usize = 8 << 10;
    const RECURSION: usize = 16 << 20;
    const BELOW: usize = 1 << 20;
    let terms = filter_depth.saturating_mul(PER_LEVEL);
    let size = FRAMES.saturating_add(terms);
    match recursion {
        false => (size, 0),
        true => {
            let reserve = BELOW.saturating_add(terms);
            (size.saturating_add(RECURSION).saturating_add(reserve), reserve)
        }
    }
}

/// What the run's coordinator hears.
enum Heard {
    Signal(Signal),
    /// `--start`'s command exited while the run waited.
    StartExited(Exit),
    /// Loop `t` ended.
    Ended(usize, Box<UrlResult>),
}

/// Runs every URL's loop to the run's end.
pub fn run(config: Config) -> Ending {
    let Config {
        targets,
        polling,
        idempotency_key,
        timeout,
        any,
        output_file,
        junit,
        style,
        limits,
        command,
        start: server,
    } = config;
    let urls: Vec<&str> = targets.iter().map(|target| target.shown.as_str()).collect();
    let reporter = Reporter::new(style, &urls, idempotency_key);
    match &polling.trace {
        Err(why) => reporter.warn(why),
        Ok(Some(trace)) => trace.dropped_state().iter().for_each(|why| reporter.warn(why)),
        Ok(None) => {}
    }
    // `-- CMD` is handed the run's trace, as a span of its own.
    let command = match (command, &polling.trace) {
        (Some(command), Ok(Some(trace))) => Some(command.traced(trace)),
        (command, _) => command,
    };
    let client = &polling.client;
    let store: Option<Box<dyn Store>> = match &limits.state {
        Some(StateSpec::File(path)) => Some(Box::new(FileStore::new(path))),
        Some(StateSpec::Redis(url)) => match RedisStore::new(url, &client.trust) {
            Ok(store) => Some(Box::new(store)),
            // Before anything is sent: the URL parsed, but its TLS roots did not.
            Err(why) => return stopped_early(&reporter, &Error::usage(format!("--state `{}`: {why}", url.shown()))),
        },
        None => None,
    };
    let connect = timeout.map_or(client.connect_timeout, |t| t.min(client.connect_timeout));
    let unix_socket = client.unix_socket.clone();
    let deadline = timeout.map(|timeout| Instant::now() + timeout);
    // How long a half-open probe may take: its lease must outlast it. A --paginate probe is a
    // whole walk, up to --max-pages requests (the lease is cut at the run's deadline: `Shared`).
    let walked = polling.pages.as_ref().map_or(1, |pages| pages.max.max(1));
    let probe_time = (client.connect_timeout + client.request_timeout).saturating_mul(walked);
    let shared = Shared::new(store, limits.rate, limits.retry_budget, limits.breaker, limits.state_fail, probe_time);
    let common = Arc::new(Common {
        polling,
        keep_last: limits.fallback == Some(Fallback::Last),
        deadline,
        shared,
        reporter,
        progress: Progress::new(urls.len()),
        cancel: Cancel::default(),
        signal_end: Arc::default(),
    });
    let mut ends: Vec<Option<UrlResult>> = targets.iter().map(|_| None).collect();
    // --start: no target may answer yet (another server's: the run ends as that URL's failure,
    // reported as any), then the command starts.
    let server = match &server {
        Some(start) => match serve::free(&targets, unix_socket.as_deref(), connect) {
            Err((t, error)) => {
                if let (Some(slot), Some(target), Some(progress)) =
                    (ends.get_mut(t), targets.get(t), common.progress.of(t))
                {
                    *slot = Some(UrlResult::failed(&target.shown, error, progress));
                }
                let finale = Finale { output_file, junit, fallback: limits.fallback, command: None, server: None };
                return ending::finish(common, &targets, ends, Over::Failed(t), finale);
            }
            Ok(()) => Some(start),
        },
        None => None,
    };
    let mut started = None;
    let over = match start(&common, &targets, server, &mut started) {
        Ok(heard) => gather_endings(&heard, &mut ends, &common, any, deadline),
        Err(why) => {
            common.cancel.cancel();
            if let Some(server) = &started {
                server.stop(&common.reporter);
            }
            return stopped_early(&common.reporter, &why);
        }
    };
    let server = started;
    if let Some(server) = &server {
        server.waited(matches!(over, Over::Done), &common.reporter);
        // From here a signal waits for the server's stop (and is passed on to -- CMD).
        common.signal_end.hold();
    }
    // Loops still running stop at their next wait; one in a request ends with the process, and
    // an --auth-cmd still running is ended with what it started.
    common.cancel.cancel();
    child::end_all();
    let finale = Finale { output_file, junit, fallback: limits.fallback, command, server };
    ending::finish(common, &targets, ends, over, finale)
}

/// Listens for signals, starts `--start`'s command (`server`, into `started`) once a signal
/// can no longer end poll before it stops it, and each URL's loop on a thread of its own;
/// everything that can end the run comes on the channel returned.
fn start(
    common: &Arc<Common>,
    targets: &[config::Target],
    server: Option<&config::Start>,
    started: &mut Option<Arc<Server>>,
) -> Result<mpsc::Receiver<Heard>, Error> {
    let (tell, heard) = mpsc::channel();
    let signals = tell.clone();
    let signal_end = Arc::clone(&common.signal_end);
    signals::listen(move |signal| {
        // Once the run is over, nobody listens: the signal comes while its ending is written.
        if signals.send(Heard::Signal(signal)).is_err() {
            signal_end.late(signal);
        }
    })
    .map_err(|e| Error::permanent(format!("cannot install signal handlers: {e}")))?;
    if let Some(spec) = server {
        let server = started.insert(Server::launch(spec, &common.reporter)?);
        server
            .watch(tell.clone(), Heard::StartExited)
            .map_err(|e| Error::permanent(format!("cannot watch --start's command: {e}")))?;
    }
    let (size, reserve) = loop_stack(common.polling.filter_depth(), common.polling.filters_recurse());
    for ((t, target), progress) in targets.iter().enumerate().zip(common.progress.each()) {
        let (common, target, tell) = (Arc::clone(common), target.clone(), tell.clone());
        let progress = Arc::clone(progress);
        let named = target.shown.clone();
        let thread = std::thread::Builder::new().name(format!("poll-{t}"));
        stack::spawn(thread, size, reserve, move || {
            let run = || target::run(&common, t, &target, &progress);
            if let Some(end) = guarded(&target.shown, &progress, run) {
                let _ = tell.send(Heard::Ended(t, Box::new(end)));
            }
        })
        .map_err(|e| Error::permanent(format!("cannot start a thread for {named}: {e}")))?;
    }
    Ok(heard)
}

/// A loop run so that a bug that panics it still ends the run as an error of
/// its URL (`shown`), with what the run started ended after it: the release
/// build unwinds as the tests' does (Cargo.toml). `None`: the run ended first.
fn guarded(
    shown: &str,
    progress: &LoopProgress,
    run: impl FnOnce() -> Result<UrlResult, Cancelled>,
) -> Option<UrlResult> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(end)) => Some(end),
        Ok(Err(Cancelled)) => None,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|what| what.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let error = format!("internal error in the loop of {shown}: {what} (please report it)");
            Some(UrlResult::failed(shown, Error::permanent(error), progress))
        }
    }
}

/// Gathers the loops' endings into `ends` as they come, until they end the
/// run (every loop done, or with `--any` one; a failure, or with `--any` the
/// last), or a signal or the deadline (the receive's timeout) does.
fn gather_endings(
    heard: &mpsc::Receiver<Heard>,
    ends: &mut [Option<UrlResult>],
    common: &Common,
    any: bool,
    deadline: Option<Instant>,
) -> Over {
    loop {
        let news = match deadline {
            Some(deadline) => {
                let left = (deadline + DEADLINE_GRACE).saturating_duration_since(Instant::now());
                match heard.recv_timeout(left) {
                    Ok(news) => news,
                    Err(_) => return Over::Stuck,
                }
            }
            None => match heard.recv() {
                Ok(news) => news,
                Err(_) => return Over::Stuck,
            },
        };
        let (t, end) = match news {
            Heard::Signal(signal) => {
                common.signal_end.ended_by(signal);
                return Over::Signal(signal);
            }
            Heard::Ended(t, end) => (t, end),
            Heard::StartExited(exit) => return Over::StartExited(exit),
        };
        common.reporter.ended(t);
        let done = end.is_done();
        if let Some(slot) = ends.get_mut(t) {
            *slot = Some(*end);
        }
        let all_ended = ends.iter().all(Option::is_some);
        match (any, done) {
            (true, true) | (false, true) if any || all_ended => return Over::Done,
            (false, false) => return Over::Failed(t),
            (true, false) if all_ended => {
                let worst = ends
                    .iter()
                    .enumerate()
                    .filter_map(|(t, end)| end.as_ref().and_then(UrlResult::error).map(|e| (t, e)))
                    .max_by_key(|(t, e)| (e.severity(), std::cmp::Reverse(*t)))
                    .map_or(t, |(t, _)| t);
                return Over::Failed(worst);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loop_that_panics_ends_as_an_error_of_its_url() {
        let progress = Progress::new(1);
        let Some(progress) = progress.of(0) else { panic!("one loop's progress") };
        let Some(end) = guarded("http://h/", progress, || panic!("boom")) else { panic!("a panic is an ending") };
        let Some(error) = end.error() else { panic!("an error") };
        assert_eq!(error.exit_code(), 3);
        assert_eq!(error.to_string(), "internal error in the loop of http://h/: boom (please report it)");
        assert!(guarded("http://h/", progress, || Err(Cancelled)).is_none(), "a loop the run ended says nothing");
    }

    /// The build users get unwinds, as the tests' build does: a loop's panic ends
    /// the run as above there too, not with an abort that leaves `--auth-cmd` running.
    #[test]
    fn the_release_build_unwinds_as_the_tests_do() {
        let manifest = include_str!("../../Cargo.toml");
        let release = manifest.split("[profile.release]").nth(1).unwrap_or_default();
        let release = release.split("\n[").next().unwrap_or_default();
        assert!(!release.contains("panic"), "[profile.release] sets a panic strategy: {release}");
    }
}

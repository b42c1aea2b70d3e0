//! The live progress line of each URL, on a terminal only (hidden lines cost
//! nothing): `⠋ attempt 3 · 503 · retrying in 1.6s (backoff) · 4.2s / 5m`,
//! its wait counted down as it passes.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::report::term::Narrowed;
use crate::util::sync::lock;
use crate::util::text::human;

/// Where the lines are drawn: stderr, narrowed (`term.rs`), when `live`; nowhere otherwise.
pub(crate) fn lines(live: bool) -> MultiProgress {
    match live {
        true => MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(Narrowed::stderr()))),
        false => MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
    }
}

/// One URL's line, and the wait it counts down.
pub(crate) struct Live {
    pub bar: ProgressBar,
    wait: Arc<Mutex<Option<Wait>>>,
}

impl Live {
    /// A line in `multi` (hidden unless `live`), `prefix` before its words,
    /// the elapsed time against `deadline` after them.
    pub(crate) fn new(multi: &MultiProgress, live: bool, deadline: Option<Duration>, prefix: String) -> Live {
        let wait = Arc::new(Mutex::new(None));
        let bar = if live {
            let bar = multi.add(progress_bar(&wait, deadline, prefix));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        } else {
            ProgressBar::hidden()
        };
        Live { bar, wait }
    }

    /// Waits `wait` for `what` ("next poll"), because of `why` (" (Retry-After)"; empty for the interval).
    pub(crate) fn waits(&self, wait: Duration, what: &'static str, why: String) {
        *lock(&self.wait) = Some(Wait { until: Instant::now() + wait, what, why });
    }

    /// Waits for nothing: a request is in flight.
    pub(crate) fn busy(&self) {
        *lock(&self.wait) = None;
    }
}

/// A wait between attempts, as the progress line shows it.
struct Wait {
    until: Instant,
    /// "next poll", "retrying" or "next attempt".
    what: &'static str,
    /// " (Retry-After)" and the like; empty for the interval.
    why: String,
}

/// The live progress line: `⠋ attempt 3 · 503 · retrying in 1.6s (backoff) · 4.2s / 5m`.
/// `{wait}` counts down the current wait; `{clock}` is the elapsed time against the deadline.
fn progress_bar(wait: &Arc<Mutex<Option<Wait>>>, deadline: Option<Duration>, prefix: String) -> ProgressBar {
    let wait = Arc::clone(wait);
    let started = Instant::now();
    let of = deadline.map(|d| format!(" / {}", human(d))).unwrap_or_default();
    let style = ProgressStyle::with_template("{spinner} {prefix}{msg}{wait} · {clock}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key("wait", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            if let Some(wait) = lock(&wait).as_ref() {
                let left = wait.until.saturating_duration_since(Instant::now());
                let _ = write!(w, " · {} in {:.1}s{}", wait.what, left.as_secs_f64(), wait.why);
            }
        })
        .with_key("clock", move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{:.1}s{of}", started.elapsed().as_secs_f64());
        });
    ProgressBar::new_spinner().with_style(style).with_prefix(prefix)
}

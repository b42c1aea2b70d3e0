//! The signals that end a run, one call for every platform: [`listen`]
//! turns SIGINT, SIGTERM and SIGHUP (Unix), or Ctrl-C and Ctrl-Break
//! (Windows), into calls on a thread of their own, which tell the run to end.

use crate::util::error::Signal;

/// Calls `on_signal` on a thread of its own for every SIGINT, SIGTERM and
/// SIGHUP (a closed terminal; some CI runners send it on cancel).
#[cfg(unix)]
pub(crate) fn listen(on_signal: impl Fn(Signal) + Send + 'static) -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut incoming = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
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

/// Calls `on_signal` on ctrlc's own thread for every console control event.
/// ctrlc's Windows handler is not told which event came (Ctrl-C, Ctrl-Break,
/// a closed console), so each one is an interrupt (exit 130); telling
/// Ctrl-Break apart would take unsafe code of ours or an async runtime.
#[cfg(windows)]
pub(crate) fn listen(on_signal: impl Fn(Signal) + Send + 'static) -> std::io::Result<()> {
    ctrlc::set_handler(move || on_signal(Signal::Interrupt)).map_err(|e| match e {
        ctrlc::Error::System(e) => e,
        other => std::io::Error::other(other.to_string()),
    })
}

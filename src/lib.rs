//! `poll`: send an HTTP request until a jq condition holds on its JSON body.
//!
//! The crate root is the module list and the public API: [`configure`] turns
//! the command line into a checked [`Config`] (or the ending of a run that
//! never starts: a usage error, `--help`); [`run`] (`run/mod.rs`) runs it and
//! returns the one [`Ending`] that `main` prints.
//!
//! The folders are rooms whose modules only point down (the layers in
//! `tests/it/layers.rs`), roughly: `run/` (the coordinator, each URL's loop
//! and `--watch`'s attempt, the words for a stop, the ending) -> `cli/`
//! (flags, Config, docs) -> `report/` (the record, progress, each URL's
//! result, the reporter and its voice, log and live lines) -> `state/` (the
//! shared state) -> `http/`
//! (requests, proxies, cookies, validators, credentials, bodies decoded, and
//! in `http/transport/` the connections beneath ureq) and `process/`
//! (signals, `--auth-cmd`, `-- CMD`) -> `rules/` (pure: the attempt's
//! vocabulary, decide, conditions and in `rules/jq/` the jq runtime they run
//! on, advice, breaker, bucket, operations) -> `error.rs` (the exit codes'
//! table) -> `net/` (trusted roots, TLS, Unix sockets) -> `util/` (URLs,
//! text, headers, the clock, files, waits).

mod cli;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod http;
mod net;
mod process;
mod report;
mod rules;
mod run;
mod state;
mod util;

// Test-only surface: the pure rules the table tests in `tests/it/` call and the
// fuzz targets' bodies. Hidden, so that the published crate promises only what
// `main` calls (configure, run, Ending).
#[doc(hidden)]
pub use rules::{advice, condition, policy};

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read};

pub use crate::cli::config::Config;
pub use crate::cli::flags::Generate;
pub use crate::error::EXIT_CODES;

pub use crate::run::{Closed, Ending, HandedOver, run, spawn_on_a_large_stack};

use crate::cli::environment::{self, Refused};
use crate::cli::flags::Invocation;
use crate::cli::{config, docs};
use crate::report::voice::Voice;

/// The command line, checked; or the ending of a run that never starts
/// (`--help`, `--version`, `--generate`, a usage error). `stdin` is read
/// only for `@-`.
pub fn configure(args: impl IntoIterator<Item = OsString>, stdin: &mut dyn Read) -> Result<Config, Ending> {
    // A flag clap rejects is written before --ci is known; the others follow it.
    let voice = Voice::plain(config::github_actions(None));
    let cli = match environment::parse(args) {
        Ok(Invocation::Run(cli)) => *cli,
        Ok(Invocation::Generate(kind)) => return Err(Ending::new(docs::generate(kind), None, voice)),
        Err(Refused::Shown(text)) => {
            let text = if std::io::stdout().is_terminal() { text.ansi().to_string() } else { text.to_string() };
            return Err(Ending::new(text.into_bytes(), None, voice));
        }
        Err(Refused::Usage(e)) => return Err(Ending::new(Vec::new(), Some(&e), voice)),
    };
    let voice = Voice::plain(config::github_actions(cli.ci));
    Config::from_cli(cli, stdin).map_err(|e| Ending::new(Vec::new(), Some(&e), voice))
}

//! `poll`: send an HTTP request until a jq condition holds on its JSON body.
//!
//! The crate root is the module list and the public API: [`configure`] turns
//! the command line into a checked [`Config`] (or the ending of a run that
//! never starts: a usage error, `--help`); [`run`] (`run/mod.rs`) runs it and
//! returns the one [`Ending`] that `main` prints.
//!
//! The folders are floors, each using only those below it: `run/` (the
//! coordinator and each URL's loop) -> `cli/` (flags, Config, docs) ->
//! `report/` (the attempt record, each loop's progress, the reporter) ->
//! `state/` (the shared state) -> `http/` (requests, proxies, sockets,
//! cookies, validators, credentials) -> `rules/` (pure: decide, conditions,
//! advice, breaker, bucket, operations) -> `util/` (URLs, text, errors, the
//! clock, files, waits). Within and across them, modules only point down
//! (see the test in `tests/it/layers.rs`). No unsafe code: Cargo.toml's `[lints]` forbid it.

mod cli;
mod error;
pub mod fuzz;
mod gaps;
mod http;
mod net;
mod process;
mod report;
mod rules;
mod run;
pub mod state;
mod util;

// The public modules, at the paths tests, benches and fuzz targets use.
pub use rules::{advice, condition, policy};
pub use util::parse;

use std::ffi::OsString;
use std::io::{IsTerminal as _, Read};

pub use crate::cli::config::Config;
pub use crate::cli::flags::Generate;
pub use crate::error::EXIT_CODES;

pub use crate::run::{Closed, Ending, HandedOver, STACK_SIZE, run};

use crate::cli::flags::{self, Invocation};
use crate::cli::{config, docs};
use crate::error::Error;
use crate::report::voice::Voice;

/// The command line, checked; or the ending of a run that never starts
/// (`--help`, `--version`, `--generate`, a usage error). `stdin` is read
/// only for `@-`.
pub fn configure(args: impl IntoIterator<Item = OsString>, stdin: &mut dyn Read) -> Result<Config, Ending> {
    // A flag clap rejects is written before --ci is known; the others follow it.
    let voice = Voice::plain(config::github_actions(None));
    let cli = match flags::parse(args) {
        Ok(Invocation::Run(cli)) => *cli,
        Ok(Invocation::Generate(kind)) => return Err(Ending::new(docs::generate(kind), None, voice)),
        Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion) => {
            let text = e.render();
            let text = if std::io::stdout().is_terminal() { text.ansi().to_string() } else { text.to_string() };
            return Err(Ending::new(text.into_bytes(), None, voice));
        }
        Err(e) => return Err(Ending::new(Vec::new(), Some(&Error::usage(flags::one_line(&e))), voice)),
    };
    let voice = Voice::plain(config::github_actions(cli.ci));
    Config::from_cli(cli, stdin).map_err(|e| Ending::new(Vec::new(), Some(&e), voice))
}

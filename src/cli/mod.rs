//! The command line: the clap model and its value parsers (`flags`), the
//! checked `Config` every input error surfaces in (`config`), which
//! `POLL_<FLAG>` variables a command line reads (`environment`), and the
//! completions and man page made from the model (`docs`).

pub(crate) mod config;
pub(crate) mod docs;
pub(crate) mod environment;
pub(crate) mod flags;

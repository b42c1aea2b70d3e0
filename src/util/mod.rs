//! The bottom floor, used by every other: URLs and redaction, text and
//! durations in words, the error enum and exit codes, flag values, the clock,
//! files, the command after `--`, waits that end when the run does, and the
//! two platform seams: signals, and the commands `poll` runs.

pub(crate) mod child;
pub(crate) mod clock;
pub(crate) mod error;
pub(crate) mod exec;
pub(crate) mod file;
pub mod parse;
pub(crate) mod signals;
pub(crate) mod sync;
pub(crate) mod text;
pub(crate) mod url;
pub(crate) mod wait;

//! The bottom floor, used by every other: URLs and redaction, text and
//! durations in words, flag values, the clock, files (one of the platform
//! seams: identities, modes and owners), socket timeouts in the platform's
//! unit (another), waits that end when the run does, and the stack a thread
//! has left.

pub(crate) mod clock;
pub(crate) mod file;
pub(crate) mod headers;
pub(crate) mod link;
pub mod parse;
pub(crate) mod stack;
pub(crate) mod sync;
pub(crate) mod text;
pub(crate) mod timeout;
pub(crate) mod url;
pub(crate) mod wait;

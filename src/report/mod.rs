//! What a run tells: one attempt's record (`record`), what each loop has done
//! so far (`progress`), each URL's result (`result`), and the reporter on
//! stderr (`reporter`, which dispatches to the live lines in `live`, the JSON
//! log in `log` and the error line's voice in `voice`), with the CI's step
//! summary (`summary`).

pub(crate) mod junit;
pub(crate) mod live;
pub(crate) mod log;
pub(crate) mod progress;
pub(crate) mod record;
pub(crate) mod reporter;
pub(crate) mod result;
pub(crate) mod summary;
mod term;
pub(crate) mod voice;

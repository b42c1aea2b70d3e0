//! What a run tells: one attempt's record (`record`), what each loop has done
//! so far (`progress`), and the reporter on stderr (`reporter`) with the CI's
//! step summary (`summary`).

pub(crate) mod progress;
pub(crate) mod record;
pub(crate) mod reporter;
pub(crate) mod result;
pub(crate) mod summary;
mod term;

//! What a run tells: one attempt's record (`record`), what each loop has done
//! so far (`progress`), and the reporter on stderr (`output`) with the CI's
//! step summary (`summary`).

pub(crate) mod output;
pub(crate) mod progress;
pub(crate) mod record;
pub(crate) mod summary;

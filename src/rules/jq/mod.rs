//! The jq runtime the conditions (`condition.rs`) run on, where `poll` fills
//! what jaq lacks: the standard library parsed once and pruned to what a
//! filter calls (`prelude`), and `fromjson` and `tonumber` as jq 1.7 reads a
//! string, with the guard that makes a runaway recursion a jq error
//! (`natives`). Each file says which gap it fills and why; CONTRIBUTING.md's
//! "Upgrading ureq or jaq" says what to re-read when jaq moves.

pub(crate) mod natives;
pub(crate) mod prelude;

//! The pure rules: plain values in, plain values out, no sockets and no
//! clock. `policy::decide` and the jq conditions, the server's advice, the
//! breaker, the rate bucket, the retry budget and the learned rate,
//! `--submit`'s operation rules and how `--watch` resumes; and the jq
//! runtime the conditions run on (`jq/`).

pub mod advice;
pub mod attempt;
pub(crate) mod breaker;
pub(crate) mod bucket;
pub mod budget;
pub mod condition;
pub(crate) mod cubic;
pub(crate) mod jq;
pub(crate) mod operation;
pub(crate) mod pages;
pub mod policy;
pub(crate) mod resume;
pub(crate) mod stall;
pub(crate) mod trace;

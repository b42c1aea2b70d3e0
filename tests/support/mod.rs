//! Shared helpers for the integration tests: each `tests/*.rs` binary does `mod support;`.

// Every test binary compiles this module on its own and uses a different
// subset of it, so unused items are expected and not worth a warning.
#![allow(dead_code)]

pub mod redis;
pub mod server;
pub mod tinyproxy;

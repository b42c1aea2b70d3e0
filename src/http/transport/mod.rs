//! The connections beneath ureq's HTTP/1.1, made and carried by `poll`'s own
//! code: how a loop's agent connects and resolves (`connect`), the socket it
//! reads and writes (`wire`), and the request line rewritten for an HTTP
//! proxy (`absolute_form`). Each file says in its first lines which gap of
//! ureq's it fills and what justifies it (a figure of docs/BENCHMARKS.md, or
//! what users see).
//!
//! This folder, and nothing else, uses `ureq::unversioned`, which ureq may
//! change in any minor release (hence `~3.5` in Cargo.toml): CONTRIBUTING.md's
//! "Upgrading ureq or jaq" says what to re-read and which tests guard each file.

pub(crate) mod absolute_form;
pub(crate) mod connect;
pub(crate) mod wire;

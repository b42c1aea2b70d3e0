//! What `poll` owns beneath its crates. Each module fills one gap that ureq
//! or jaq leaves, says which in its first lines, and is justified by what
//! users see or by a figure measured in docs/BENCHMARKS.md. ureq's
//! `unversioned` API, which may change in any minor release, is used here
//! and nowhere else (`transport`, `connect`, `absolute_form`);
//! CONTRIBUTING.md's "Upgrading ureq or jaq" says what to re-read and which
//! tests guard each module.

pub(crate) mod absolute_form;
pub(crate) mod connect;
pub(crate) mod decode;
pub(crate) mod natives;
pub(crate) mod prelude;
pub(crate) mod transport;

//! For the unit tests: the end-to-end tests' redis-server harness (started per
//! test by their daemon helper, stopped by its PID on drop, skipped loudly where
//! redis-server is missing), compiled in here too, so that there is one harness.

#![allow(dead_code, reason = "the unit tests use a part of it")]

#[path = "../../tests/support/daemon.rs"]
mod daemon;
#[path = "../../tests/support/redis.rs"]
pub(crate) mod redis;
#[path = "../../tests/support/tool.rs"]
mod tool;

pub(crate) use tool::have_tool;

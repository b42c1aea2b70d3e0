//! The integration tests, as one binary with a module per topic (as cargo's own
//! test suite is): the helpers of `tests/support/` compile and link once, and
//! each helper is used, or the build says so.
//!
//! `cargo test --test it TOPIC::` runs one topic (`cargo test --test it soak::`).

// tests/support/ stays beside tests/it/ rather than inside it: the crate's own unit
// tests compile three of its files (daemon.rs, redis.rs, tool.rs) by path (src/state/test_support.rs).
#[path = "../support/mod.rs"]
mod support;

// The binary's behaviour end to end, against the scripted loopback server.
mod ci;
mod conditional;
mod credentials;
mod environment;
#[cfg(unix)] // Files, modes, owners, devices and process groups as Unix has them.
mod hostile;
mod junit;
mod log;
mod meet_headers;
// --watch beside --state, --stall, conditional polls and --interval (issue 49).
mod meet_watch;
// Where POLL_* meets the command line, --help and the JUnit report (issue 49).
mod meet_env;
mod operations;
// --paginate and --next: every page of a collection (issue 51).
mod pages;
// tcp:// and unix:// targets, --done-on refused (issue 50); and --start's server (process groups as Unix has them).
#[cfg(unix)]
mod ports;
mod request;
mod run;
mod several;
mod soak;
#[cfg(unix)]
mod start;
mod submit;
mod terminal;
#[cfg(unix)] // --unix-socket.
mod unix;
mod waits;
mod watch;
// --watch against real servers: nginx with nchan, etcd.
mod watch_servers;
// --watch resumed as each server expects: etcd (real), Kubernetes-style and SSE (scripted).
mod watch_resume;
// -I, conditional polls and status lists against a stock nginx with gzip on.
mod nginx;
// Mutual TLS against real servers that ask for a client certificate: nginx, etcd, redis-server.
mod mtls;
// The container recipes of docs/guide/containers.md, read from the page (`-o /dev/null`: Unix).
#[cfg(unix)]
mod containers;

// Shared state: the file, Redis, a Redis Cluster and Sentinels.
mod cluster;
mod redis;
mod state;
mod storm;

// Every pair of features together, held to the contract's universal promises. Unix: `-- sh -c`, `--auth-cmd printf`.
#[cfg(unix)]
mod pairs;

// The pure rules as tables.
mod condition;
mod policy;

// The repository: generated files, documents, the release, the layers, the harness itself.
mod docs;
mod generated;
mod harness;
mod layers;
mod release;

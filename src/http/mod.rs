//! The network: a request and its one HTTP client (`request`), proxies and
//! Unix sockets under it, and what each loop keeps between requests: its
//! cookies, its conditional validators and its credentials.

pub(crate) mod conditional;
pub(crate) mod cookies;
pub(crate) mod credentials;
pub(crate) mod proxy;
pub(crate) mod request;
pub(crate) mod unix;

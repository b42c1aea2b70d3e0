//! The network: a request and its one HTTP client (`request`), proxies,
//! Unix sockets and the trusted roots (`tls`) under it, and what each loop
//! keeps between requests: its cookies, its conditional validators and its
//! credentials.

pub(crate) mod conditional;
pub(crate) mod cookies;
pub(crate) mod credentials;
pub(crate) mod proxy;
pub(crate) mod request;
pub(crate) mod tls;
pub(crate) mod unix;
pub(crate) mod wire;

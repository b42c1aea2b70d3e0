//! HTTP: a request and its one client (`request`), which proxy each request
//! takes (`proxy`), a body decoded by its `Content-Encoding` (`decode`), a
//! streaming reply's body read as events (`events`), and what each loop keeps
//! between requests: its cookies, its conditional validators and its
//! credentials. Beneath them, the connections ureq runs on (`transport/`, the
//! one folder on the part of ureq's API that may change in any minor
//! release), on `net/`'s TLS and sockets.

pub(crate) mod conditional;
pub(crate) mod cookies;
pub(crate) mod credentials;
pub(crate) mod decode;
pub(crate) mod events;
pub(crate) mod proxy;
pub(crate) mod request;
pub(crate) mod transport;

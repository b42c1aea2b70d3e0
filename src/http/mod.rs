//! HTTP: a request and its one client (`request`), which proxy each request
//! takes (`proxy`), a streaming reply's body read as events (`events`), and
//! what each loop keeps between requests: its cookies, its conditional
//! validators and its credentials. The connections under it are `net/`'s and
//! `gaps/`'s.

pub(crate) mod conditional;
pub(crate) mod cookies;
pub(crate) mod credentials;
pub(crate) mod events;
pub(crate) mod proxy;
pub(crate) mod request;

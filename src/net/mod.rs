//! The connections under both clients, HTTP and the Redis store: the roots
//! `poll` trusts (`roots`), its one TLS configuration (`tls`) and Unix
//! sockets (`unix`). Neither client imports the other; both stand on this floor.

pub(crate) mod roots;
pub(crate) mod tls;
pub(crate) mod unix;

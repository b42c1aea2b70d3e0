//! The connections under both clients, HTTP and the Redis store: the roots
//! `poll` trusts (`roots`), its one TLS configuration (`tls`), Unix
//! sockets (`unix`), and the connect-only attempt of `tcp://` and `unix://` targets (`probe`). Neither client imports the other; both stand on this floor.

pub(crate) mod probe;
pub(crate) mod roots;
pub(crate) mod tls;
pub(crate) mod unix;

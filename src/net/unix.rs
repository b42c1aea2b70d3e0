//! Unix domain sockets: `--unix-socket PATH` (every HTTP connection goes to
//! one socket instead of the URL's host, as curl's flag does) and `--state
//! redis+unix://`. A path where no socket is yet (the daemon is still
//! starting), or whose socket nobody listens on, is a refused connection and
//! is retried; a path that is something else than a socket is [`NotASocket`],
//! and a socket this user may not open or reach is [`NoPermission`]: both are
//! permanent, since waiting cannot change them.
//!
//! This is the platform seam for them: where there are no Unix sockets,
//! [`check`] refuses the flag before anything is sent, and [`UnixSocket`] is
//! a type with no value whose connect fails, so that callers need no `cfg`.

use std::fmt;
use std::path::Path;

/// The longest socket path the kernel takes (`sun_path` is 108 bytes with its NUL on Linux).
const MAX_PATH: usize = 107;

/// `--unix-socket` checked before anything is sent: a path the kernel could
/// never connect to is a usage error; one that does not exist yet is fine.
pub(crate) fn check(path: &Path) -> Result<(), String> {
    if !cfg!(unix) {
        return Err("needs a Unix-like system".to_string());
    }
    let length = path.as_os_str().len();
    if length == 0 {
        return Err("the socket path is empty".to_string());
    }
    if length > MAX_PATH {
        return Err(format!("`{}` is {length} bytes long; a socket path has at most {MAX_PATH}", path.display()));
    }
    Ok(())
}

/// The error inside the I/O error of a path that exists but is no socket;
/// `http/request.rs` sorts it as a permanent failure by its type.
#[derive(Debug)]
pub(crate) struct NotASocket(pub String);

impl fmt::Display for NotASocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotASocket {}

/// The error inside the I/O error of a socket this user may not open (its
/// mode, owner and group say who may) or reach (a folder on the way is
/// closed to them); `http/request.rs` sorts it as a permanent failure.
#[derive(Debug)]
pub(crate) struct NoPermission(pub String);

impl fmt::Display for NoPermission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoPermission {}

pub(crate) use socket::{UnixSocket, connect};

#[cfg(unix)]
mod socket {
    use std::io::{self, ErrorKind, Read, Write};
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
    use std::os::unix::net::UnixStream;
    use std::path::Path;
    use std::time::Duration;

    use nix::unistd::{Gid, Group, Uid, User};

    use super::{NoPermission, NotASocket};
    use crate::util::timeout;

    /// A connected Unix stream socket, for a caller that does its own reads and writes (Redis).
    #[derive(Debug)]
    pub(crate) struct UnixSocket(UnixStream);

    impl UnixSocket {
        /// Connects to the socket at `path`, at once (see [`connect`] on a full backlog).
        pub(crate) fn connect(path: &Path) -> io::Result<UnixSocket> {
            UnixStream::connect(path).map(UnixSocket)
        }

        /// Bounds each later read and write by `timeout`.
        pub(crate) fn set_timeouts(&self, timeout: Option<Duration>) -> io::Result<()> {
            self.0.set_read_timeout(timeout).and_then(|()| self.0.set_write_timeout(timeout))
        }
    }

    impl Read for UnixSocket {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.0.read(buf)
        }
    }

    impl Write for UnixSocket {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.write(buf)
        }

        fn flush(&mut self) -> io::Result<()> {
            self.0.flush()
        }
    }

    /// Opens the socket for HTTP. The kernel answers a connect to a Unix
    /// socket at once, except when the listener's backlog is full: then the
    /// wait is bounded by the socket's send timeout, set to the connect
    /// timeout first (std's `UnixStream::connect` cannot, hence socket2; in
    /// the platform's unit, `util/timeout.rs`), and
    /// ends as `TimedOut`. Refusals are `ConnectionRefused` with words that say
    /// which; a path that is no socket carries [`NotASocket`], a socket this
    /// user may not open [`NoPermission`].
    pub(crate) fn connect(path: &Path, timeout: Option<Duration>) -> io::Result<socket2::Socket> {
        let shown = path.display();
        match std::fs::metadata(path) {
            Ok(meta) if !meta.file_type().is_socket() => {
                let kind = meta.file_type();
                let what = if kind.is_dir() {
                    "a folder"
                } else if kind.is_file() {
                    "a regular file"
                } else if kind.is_char_device() {
                    "a character device"
                } else if kind.is_block_device() {
                    "a block device"
                } else if kind.is_fifo() {
                    "a FIFO"
                } else {
                    "something else"
                };
                let why = NotASocket(format!("`{shown}` is {what}, not a socket"));
                return Err(io::Error::new(ErrorKind::InvalidInput, why));
            }
            Ok(_) => {}
            // Not there yet: the daemon may still be starting, as a port nobody listens on yet.
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(refused(format!("no socket at `{shown}` (yet)"))),
            Err(_) => {}
        }
        let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)?;
        socket.set_write_timeout(timeout.map(timeout::socket))?;
        let address = socket2::SockAddr::unix(path)?;
        match socket.connect(&address) {
            Ok(()) => {}
            // The backlog stayed full for the whole connect timeout.
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(io::Error::from(ErrorKind::TimedOut));
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Err(refused(format!("no socket at `{shown}` (yet)"))),
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                return Err(refused(format!("nothing listens on the socket `{shown}`")));
            }
            Err(e) if e.kind() == ErrorKind::PermissionDenied => return Err(denied(path)),
            Err(e) => return Err(e),
        }
        socket.set_write_timeout(None)?;
        Ok(socket)
    }

    fn refused(detail: String) -> io::Error {
        io::Error::new(ErrorKind::ConnectionRefused, detail)
    }

    /// A connect this user was not allowed (EACCES), in words that say who
    /// is: waiting cannot fix a permission. Except a socket with no permission
    /// bits at all, which its daemon has made and not opened yet (dockerd
    /// binds under umask 0777, then chowns and chmods it; go-connections'
    /// `sockets/unix_socket_unix.go`): refused for now, as a socket not there yet.
    fn denied(path: &Path) -> io::Error {
        let shown = path.display();
        let me = user_name(nix::unistd::geteuid().as_raw());
        let why = match std::fs::metadata(path) {
            Ok(meta) if meta.mode() & 0o777 == 0 => {
                return refused(format!("permission denied on the socket `{shown}` (mode 0000: not opened yet)"));
            }
            Ok(meta) => format!(
                "the socket `{shown}` (owner {}, group {}, mode {:04o}) does not let user {me} in",
                user_name(meta.uid()),
                group_name(meta.gid()),
                meta.mode() & 0o7777
            ),
            Err(_) => format!("user {me} may not reach the socket `{shown}`: a folder on its way is closed to it"),
        };
        io::Error::new(ErrorKind::PermissionDenied, NoPermission(why))
    }

    /// A user's name, else `uid N`.
    fn user_name(uid: u32) -> String {
        let user = User::from_uid(Uid::from_raw(uid)).ok().flatten();
        user.map_or_else(|| format!("uid {uid}"), |user| user.name)
    }

    /// A group's name, else `gid N`.
    fn group_name(gid: u32) -> String {
        let group = Group::from_gid(Gid::from_raw(gid)).ok().flatten();
        group.map_or_else(|| format!("gid {gid}"), |group| group.name)
    }
}

#[cfg(not(unix))]
mod socket {
    use std::io::{self, Read, Write};
    use std::path::Path;
    use std::time::Duration;

    /// Never reached: `check` refuses `--unix-socket` here before anything is sent.
    pub(crate) fn connect(_: &Path, _: Option<Duration>) -> io::Result<socket2::Socket> {
        Err(io::Error::other("--unix-socket needs a Unix-like system"))
    }

    /// No Unix sockets here: no value of this type exists, and connecting is `Unsupported`.
    #[derive(Debug)]
    pub(crate) enum UnixSocket {}

    impl UnixSocket {
        pub(crate) fn connect(_: &Path) -> io::Result<UnixSocket> {
            Err(io::Error::new(io::ErrorKind::Unsupported, "Unix sockets need a Unix-like system"))
        }

        pub(crate) fn set_timeouts(&self, _: Option<Duration>) -> io::Result<()> {
            match *self {}
        }
    }

    impl Read for UnixSocket {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            match *self {}
        }
    }

    impl Write for UnixSocket {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            match *self {}
        }

        fn flush(&mut self) -> io::Result<()> {
            match *self {}
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn socket_paths_the_kernel_cannot_take_are_refused_up_front() {
        assert!(check(Path::new("/var/run/docker.sock")).is_ok());
        assert!(check(Path::new("")).is_err_and(|e| e.contains("empty")));
        let long = format!("/tmp/{}", "x".repeat(120));
        assert!(check(Path::new(&long)).is_err_and(|e| e.contains("at most 107")));
        assert!(check(Path::new(&long[..MAX_PATH])).is_ok());
    }

    #[test]
    fn a_missing_path_is_refused_and_a_file_is_not_a_socket() {
        let dir = std::env::temp_dir().join(format!("poll-unix-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let missing = dir.join("missing.sock");
        let Err(e) = connect(&missing, None) else { panic!("a missing socket fails") };
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused);
        assert!(e.to_string().contains("(yet)"), "{e}");
        let file = dir.join("file");
        let _ = std::fs::write(&file, b"x");
        let Err(e) = connect(&file, None) else { panic!("a file is no socket") };
        assert!(e.get_ref().is_some_and(|inner| inner.is::<NotASocket>()), "{e:?}");
        assert!(e.to_string().contains("is a regular file, not a socket"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

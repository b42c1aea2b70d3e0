//! Where std has no Unix sockets (Windows), stand-ins of the two types the test server names, so
//! that the suite compiles for every target: nothing of this type can exist, binding and
//! connecting fail. The `--unix-socket` tests (`tests/unix.rs`) are Unix-only.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::path::Path;
use std::time::Duration;

fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "no Unix sockets on this system")
}

pub enum UnixListener {}

impl UnixListener {
    pub fn bind(_: &Path) -> io::Result<UnixListener> {
        Err(unsupported())
    }
    pub fn accept(&self) -> io::Result<(UnixStream, ())> {
        match *self {}
    }
}

pub enum UnixStream {}

impl UnixStream {
    pub fn connect(_: &Path) -> io::Result<UnixStream> {
        Err(unsupported())
    }
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        match *self {}
    }
    pub fn shutdown(&self, _: Shutdown) -> io::Result<()> {
        match *self {}
    }
    pub fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        match *self {}
    }
}

impl Read for &UnixStream {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match **self {}
    }
}

impl Read for UnixStream {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        match *self {}
    }
}

impl Write for UnixStream {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        match *self {}
    }
    fn flush(&mut self) -> io::Result<()> {
        match *self {}
    }
}

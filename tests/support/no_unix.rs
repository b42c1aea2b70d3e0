//! Where std has no Unix sockets (Windows), stand-ins of the two types the test server names, so
//! that the suite compiles for every target: binding and connecting fail, so no value of them is
//! ever made. The `--unix-socket` tests (`tests/it/unix.rs`) are Unix-only.

use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::path::Path;
use std::time::Duration;

fn unsupported() -> io::Error {
    io::Error::new(io::ErrorKind::Unsupported, "no Unix sockets on this system")
}

pub struct UnixListener(());

impl UnixListener {
    pub fn accept(&self) -> io::Result<(UnixStream, ())> {
        Err(unsupported())
    }
}

pub struct UnixStream(());

impl UnixStream {
    pub fn connect(_: &Path) -> io::Result<UnixStream> {
        Err(unsupported())
    }
    pub fn try_clone(&self) -> io::Result<UnixStream> {
        Err(unsupported())
    }
    pub fn shutdown(&self, _: Shutdown) -> io::Result<()> {
        Err(unsupported())
    }
    pub fn set_read_timeout(&self, _: Option<Duration>) -> io::Result<()> {
        Err(unsupported())
    }
}

impl Read for &UnixStream {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(unsupported())
    }
}

impl Read for UnixStream {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(unsupported())
    }
}

impl Write for UnixStream {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(unsupported())
    }
    fn flush(&mut self) -> io::Result<()> {
        Err(unsupported())
    }
}

//! The terminal the progress lines are drawn on: stderr, two columns
//! narrower than it is. indicatif fills each line to the last column, so the
//! `^C` a terminal echoes for Ctrl-C would wrap to a line of its own, and
//! clearing the progress lines at the end would leave the last frame above
//! the error line; two columns to spare keep the echo on the line cleared.

use std::io;

use console::Term;
use indicatif::TermLike;

/// Columns left free at the right of each progress line, for the terminal's `^C`.
const SPARE: u16 = 2;

#[derive(Debug)]
pub(crate) struct Narrowed(Term);

impl Narrowed {
    pub(crate) fn stderr() -> Narrowed {
        Narrowed(Term::stderr())
    }
}

impl TermLike for Narrowed {
    fn width(&self) -> u16 {
        self.0.size().1.saturating_sub(SPARE).max(1)
    }

    fn height(&self) -> u16 {
        self.0.size().0
    }

    fn move_cursor_up(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_up(n)
    }

    fn move_cursor_down(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_down(n)
    }

    fn move_cursor_right(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_right(n)
    }

    fn move_cursor_left(&self, n: usize) -> io::Result<()> {
        self.0.move_cursor_left(n)
    }

    fn write_line(&self, s: &str) -> io::Result<()> {
        self.0.write_line(s)
    }

    fn write_str(&self, s: &str) -> io::Result<()> {
        self.0.write_str(s)
    }

    fn clear_line(&self) -> io::Result<()> {
        self.0.clear_line()
    }

    fn flush(&self) -> io::Result<()> {
        self.0.flush()
    }
}

//! Process control, each a platform seam with a Unix and a Windows half: the
//! signals that end a run (`signals`), the commands `poll` runs for
//! `--auth-cmd` (`child`), the command a ready run hands over to,
//! `-- CMD` (`exec`), and `--start`'s server in a group of its own (`start`);
//! the shell both of those commands run in (`shell`).

pub(crate) mod child;
pub(crate) mod exec;
pub(crate) mod shell;
pub(crate) mod signals;
pub(crate) mod start;

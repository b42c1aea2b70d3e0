//! `-- CMD`: the command a ready run hands over to, as wait-for-it and
//! wait4x do for container entry points. It is looked up on `PATH` when the
//! run is configured, so a typo is exit 127 before anything is sent; after
//! exit 0 it takes poll's place: on Unix by exec (the same pid, its own exit
//! status and signals), on Windows, which has no exec, as a child whose
//! exit status becomes poll's.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::util::error::Error;
use crate::util::text::printable;

/// The command after `--`, found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// The program as the user wrote it, for messages and `argv[0]`.
    name: OsString,
    /// Where it was found.
    program: PathBuf,
    args: Vec<OsString>,
}

impl Command {
    /// Finds `argv[0]` as exec would: a path as given, a bare name on `PATH`
    /// (with `PATHEXT` on Windows). Not found is exit 127; found but not a
    /// program this user may run is exit 126.
    pub(crate) fn find(argv: &[OsString]) -> Result<Command, Error> {
        let Some((name, args)) = argv.split_first() else {
            return Err(Error::Usage("--: give the command to run after the URLs".into()));
        };
        let shown = shown(name);
        let program = which::which(name).map_err(|_| {
            // `which` skips what it cannot run: a file that exists at a path given is one.
            let path = std::path::Path::new(name);
            if path.components().count() > 1 && path.exists() {
                Error::CommandCannotRun(format!("cannot run `{shown}`: it is not an executable file"))
            } else {
                Error::CommandNotFound(format!("`{shown}` not found (the command after --)"))
            }
        })?;
        Ok(Command { name: name.clone(), program, args: args.to_vec() })
    }

    /// Runs the command in poll's place. Returns only when it could not be
    /// started (or, on Windows, with its exit status once it is over).
    pub(crate) fn hand_over(&self) -> Result<i32, Error> {
        imp::hand_over(self).map_err(|e| {
            let why = format!("cannot run `{}`: {e}", shown(&self.name));
            match e.kind() {
                std::io::ErrorKind::NotFound => Error::CommandNotFound(why),
                _ => Error::CommandCannotRun(why),
            }
        })
    }
}

fn shown(name: &std::ffi::OsStr) -> String {
    printable(&name.to_string_lossy())
}

#[cfg(unix)]
mod imp {
    use std::os::unix::process::CommandExt as _;

    /// exec: poll's pid, stdio and environment are the command's now.
    pub(super) fn hand_over(command: &super::Command) -> std::io::Result<i32> {
        let error = std::process::Command::new(&command.program).arg0(&command.name).args(&command.args).exec();
        Err(error)
    }
}

#[cfg(windows)]
mod imp {
    /// No exec on Windows: the command runs as a child on poll's console
    /// (Ctrl-C reaches both; poll's handler only records it), and its exit
    /// status is returned to become poll's.
    pub(super) fn hand_over(command: &super::Command) -> std::io::Result<i32> {
        let status = std::process::Command::new(&command.program).args(&command.args).status()?;
        Ok(status.code().unwrap_or(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_command_is_127_and_a_file_that_is_no_program_126() {
        let missing = Command::find(&["poll-test-no-such-command".into()]).map_err(|e| e.exit_code());
        assert_eq!(missing, Err(127));
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        let not_a_program = Command::find(&[manifest.into()]).map_err(|e| e.exit_code());
        assert_eq!(not_a_program, Err(126));
        assert_eq!(Command::find(&[]).map_err(|e| e.exit_code()), Err(2));
    }
}

//! `-- CMD`: the command a ready run hands over to, as wait-for-it and
//! wait4x do for container entry points. It is looked up on `PATH` when the
//! run is configured, so a typo is exit 127 before anything is sent; after
//! exit 0 it takes poll's place: on Unix by exec (the same pid, its own exit
//! status and signals), on Windows, which has no exec, as a child whose
//! exit status becomes poll's. No shell is involved, ever.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::error::{Error, Kind};
use crate::util::text::printable;

/// The command after `--`, found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// The program as the user wrote it, for messages and `argv[0]`.
    name: OsString,
    /// Where it was found.
    program: PathBuf,
    args: Vec<OsString>,
    /// Variables set for it besides poll's own environment (`TRACEPARENT`).
    env: Vec<(OsString, OsString)>,
}

impl Command {
    /// Finds `argv[0]` as exec would: a path as given, a bare name on `PATH`
    /// (with `PATHEXT` on Windows). Not found is exit 127; found but not a
    /// program this user may run is exit 126.
    pub(crate) fn find(argv: &[OsString]) -> Result<Command, Error> {
        let Some((name, args)) = argv.split_first() else {
            return Err(Error::usage("--: give the command to run after the URLs"));
        };
        let here = std::env::current_dir().unwrap_or_default();
        let program = which::which_in(name, search_path(), here).map_err(|_| unfound(name))?;
        // A script whose #! interpreter is not there cannot be run either, and exec would not say why.
        if let Some(why) = imp::cannot_load(&program) {
            return Err(Error::new(Kind::CannotRun, format!("cannot run `{}`: {why}", shown(name))));
        }
        Ok(Command { name: name.clone(), program, args: args.to_vec(), env: Vec::new() })
    }

    /// The command looked for again as the run ends, just before the last
    /// word: one removed during the wait (or whose interpreter went) ends the
    /// run with 127 or 126, which the JSON log's final object then says too,
    /// instead of a line after a final object that said 0.
    pub(crate) fn found_again(self) -> Result<Command, Error> {
        let argv: Vec<OsString> = std::iter::once(self.name).chain(self.args).collect();
        Ok(Command { env: self.env, ..Command::find(&argv)? })
    }

    /// The command, handed the run's trace as a span of its own (`TRACEPARENT`, `TRACESTATE`).
    pub(crate) fn traced(mut self, trace: &crate::rules::trace::Trace) -> Command {
        self.env.push(("TRACEPARENT".into(), trace.parent(rand::random()).into()));
        if let Some(state) = trace.state() {
            self.env.push(("TRACESTATE".into(), state.into()));
        }
        self
    }

    /// Runs the command in poll's place. Returns only when it could not be
    /// started (or, on Windows, with its exit status once it is over).
    pub(crate) fn hand_over(&self) -> Result<i32, Error> {
        imp::hand_over(self).map_err(|e| self.cannot_run(e))
    }

    /// With `--start`: the command as a child of poll (not in its place: poll outlives it to
    /// stop the server), with poll's stdio and environment and the command's own variables.
    pub(crate) fn spawn(&self) -> Result<std::process::Child, Error> {
        let mut command = std::process::Command::new(&self.program);
        command.args(&self.args).envs(self.env.iter().map(|(name, value)| (name, value)));
        imp::named(&mut command, &self.name);
        command.spawn().map_err(|e| self.cannot_run(e))
    }

    /// Why it could not be run: exit 126 or 127, as exec's failure says it.
    fn cannot_run(&self, e: std::io::Error) -> Error {
        {
            let shown = shown(&self.name);
            match e.kind() {
                // The file is there: what the kernel did not find is what runs it.
                std::io::ErrorKind::NotFound if self.program.exists() => {
                    let why = imp::cannot_load(&self.program).unwrap_or_else(|| {
                        format!("{e}: what loads it is not there (a binary built for another system or C library?)")
                    });
                    Error::new(Kind::CannotRun, format!("cannot run `{shown}`: {why}"))
                }
                std::io::ErrorKind::NotFound => Error::new(Kind::NotFound, format!("cannot run `{shown}`: {e}")),
                _ => Error::new(Kind::CannotRun, format!("cannot run `{shown}`: {e}")),
            }
        }
    }
}

fn shown(name: &OsStr) -> String {
    printable(&name.to_string_lossy())
}

/// Where a bare name is looked for: `PATH`, or with none set (on Unix) the
/// folders execvp, `env` and shells fall back to (glibc's `_CS_PATH`).
fn search_path() -> Option<OsString> {
    const DEFAULT_PATH: &str = "/bin:/usr/bin";
    std::env::var_os("PATH").or_else(|| cfg!(unix).then(|| OsString::from(DEFAULT_PATH)))
}

/// Why `which` found no program, as a shell says it: a file that is there
/// but cannot be run is exit 126, nothing at all 127. `which` skips what it
/// cannot run, so that file is looked for here: at the path given, or for a
/// bare name on Unix the first regular file of that name on `PATH` (sh and
/// bash fall back to it when no program of that name comes later).
fn unfound(name: &OsStr) -> Error {
    let shown = shown(name);
    let path = Path::new(name);
    if path.components().count() > 1 {
        return match path.exists() {
            true => Error::new(Kind::CannotRun, format!("cannot run `{shown}`: it is not an executable file")),
            false => Error::new(Kind::NotFound, format!("`{shown}` not found (the command after --)")),
        };
    }
    let on_path = search_path().filter(|_| cfg!(unix));
    let file = on_path.and_then(|dirs| std::env::split_paths(&dirs).map(|dir| dir.join(name)).find(|f| f.is_file()));
    match file {
        Some(file) => Error::new(
            Kind::CannotRun,
            format!("cannot run `{shown}`: {} is not an executable file", printable(&file.to_string_lossy())),
        ),
        None => Error::new(Kind::NotFound, format!("`{shown}` not found (the command after --)")),
    }
}

#[cfg(unix)]
mod imp {
    use std::ffi::{CString, OsStr};
    use std::io::{self, Read as _};
    use std::os::unix::ffi::OsStrExt as _;
    use std::path::Path;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use nix::errno::Errno;
    use nix::sys::signal::SigSet;

    /// exec: poll's pid, stdio and environment are the command's now. By
    /// execv, not std's exec: that is execvp, which on glibc hands a file the
    /// kernel refuses (ENOEXEC: garbage, a script without `#!`) to /bin/sh.
    pub(super) fn hand_over(command: &super::Command) -> io::Result<i32> {
        let program = c_string(command.program.as_os_str())?;
        let argv = std::iter::once(command.name.as_os_str())
            .chain(command.args.iter().map(|arg| arg.as_os_str()))
            .map(c_string)
            .collect::<io::Result<Vec<CString>>>()?;
        // The command starts with the signal state std's exec gives it. Rust
        // ignores SIGPIPE, and an ignored signal stays ignored across exec while
        // a caught one is reset to its default: catching it (safely, with
        // signal-hook) is how it is reset. No signal is blocked either.
        signal_hook::flag::register(signal_hook::consts::SIGPIPE, Arc::new(AtomicBool::new(false)))?;
        SigSet::empty().thread_set_mask()?;
        // poll's environment, with the command's own variables in place of any of the same name.
        let own = |name: &OsStr| command.env.iter().any(|(set, _)| set == name);
        let inherited = std::env::vars_os().filter(|(name, _)| !own(name));
        let env = inherited
            .chain(command.env.iter().cloned())
            .map(|(name, value)| {
                let mut pair = name;
                pair.push("=");
                pair.push(value);
                c_string(&pair)
            })
            .collect::<io::Result<Vec<CString>>>()?;
        let errno = match nix::unistd::execve(&program, &argv, &env) {
            Ok(never) => match never {},
            Err(errno) => errno,
        };
        Err(match errno {
            // The kernel's words, and what to do: shells would run such a script themselves, `--` runs none.
            Errno::ENOEXEC => io::Error::other("exec format error (no shell runs it: a script needs a #! line)"),
            errno => errno.into(),
        })
    }

    /// Why the kernel could not load `program`, when it is a script whose
    /// `#!` line names an interpreter that is not there: exec fails with
    /// ENOENT then, as for a file that is not there at all.
    pub(super) fn cannot_load(program: &Path) -> Option<String> {
        // The kernel reads no more of a #! line than this (BINPRM_BUF_SIZE).
        let mut head = [0u8; 256];
        let read = std::fs::File::open(program).and_then(|mut file| file.read(&mut head)).ok()?;
        let line = head.get(..read)?.strip_prefix(b"#!")?.split(|&b| b == b'\n').next()?;
        // As the kernel reads it: a CR stays (a script saved with CRLF names `/bin/sh\r`).
        let interpreter = line.split(|b| matches!(b, b' ' | b'\t')).find(|word| !word.is_empty())?;
        let interpreter = Path::new(OsStr::from_bytes(interpreter));
        let shown = crate::util::text::printable(&interpreter.to_string_lossy());
        (!interpreter.exists()).then(|| format!("its interpreter `{shown}` (its #! line) is not there"))
    }

    /// Its `argv[0]` as the user wrote it, as exec gives it.
    pub(super) fn named(command: &mut std::process::Command, name: &OsStr) {
        use std::os::unix::process::CommandExt as _;
        command.arg0(name);
    }

    fn c_string(text: &OsStr) -> io::Result<CString> {
        CString::new(text.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in it"))
    }
}

#[cfg(windows)]
mod imp {
    /// What Windows can start: a program (a file that begins `MZ`, whatever
    /// its name), or a batch file (`.bat`, `.cmd`, which std runs through
    /// `cmd.exe`). Anything else fails at CreateProcess, so it is exit 126
    /// before the first request, as on Unix, not after the wait.
    pub(super) fn cannot_load(program: &std::path::Path) -> Option<String> {
        use std::io::Read as _;
        let extension = program.extension().map(|e| e.to_ascii_lowercase());
        if extension.is_some_and(|e| e == "bat" || e == "cmd") {
            return None;
        }
        let mut head = [0u8; 2];
        let read = std::fs::File::open(program).and_then(|mut file| file.read_exact(&mut head));
        (read.is_err() || head != *b"MZ")
            .then(|| "it is not a program Windows can start (an .exe, a .bat or a .cmd)".to_string())
    }

    /// Windows gives no `argv[0]` of one's own: the program's path names it.
    pub(super) fn named(_: &mut std::process::Command, _: &std::ffi::OsStr) {}

    /// No exec on Windows: the command runs as a child on poll's console
    /// (Ctrl-C reaches both; poll's handler only records it), and its exit
    /// status is returned to become poll's.
    pub(super) fn hand_over(command: &super::Command) -> std::io::Result<i32> {
        let status = std::process::Command::new(&command.program)
            .args(&command.args)
            .envs(command.env.iter().map(|(name, value)| (name, value)))
            .status()?;
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

    /// A script's missing `#!` interpreter is named; one that is there, or no `#!` line, is no reason.
    #[cfg(unix)]
    #[test]
    fn a_missing_interpreter_is_named_by_the_scripts_first_line() {
        let folder = std::env::temp_dir().join(format!("poll-exec-unit-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&folder);
        let script = |name: &str, text: &str| {
            let path = folder.join(name);
            let _ = std::fs::write(&path, text);
            imp::cannot_load(&path)
        };
        let missing = script("missing", "#! /nonexistent/bin/tool -x\necho\n");
        assert_eq!(missing.as_deref(), Some("its interpreter `/nonexistent/bin/tool` (its #! line) is not there"));
        let crlf = script("crlf", "#!/bin/sh\r\necho\r\n");
        assert_eq!(crlf.as_deref(), Some("its interpreter `/bin/sh\\r` (its #! line) is not there"));
        assert_eq!(script("there", "#!/bin/sh\necho\n"), None);
        assert_eq!(script("plain", "echo\n"), None);
        assert_eq!(script("empty", "#!\n"), None);
        let _ = std::fs::remove_dir_all(&folder);
    }
}

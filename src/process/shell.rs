//! The shell a command given as one string runs in (`--auth-cmd`, `--start`):
//! `sh -c COMMAND` in a process group of its own, or `cmd /D /S /C "COMMAND"`
//! in a console process group of its own. Either way a terminal's Ctrl-C does
//! not reach it, and its caller ends it and whatever it started.

use std::process::Command;

/// The shell's name, for messages (`cannot run sh: ...`).
#[cfg(unix)]
pub(crate) const SHELL: &str = "sh";

/// The shell's name, for messages (`cannot run cmd: ...`).
#[cfg(windows)]
pub(crate) const SHELL: &str = "cmd";

/// `sh -c COMMAND`, in a process group of its own. Nor may it use the
/// terminal: the terminal stops a background group that reads it (SIGTTIN).
#[cfg(unix)]
pub(crate) fn shell(command: &str) -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut shell = Command::new("sh");
    shell.arg("-c").arg(command).process_group(0);
    shell
}

/// `cmd /D /S /C "COMMAND"`: the command line as typed (cmd does not parse
/// its arguments as other programs do, so it goes raw; `/S` takes the outer
/// quotes off and keeps the rest), without AutoRun commands, in a console
/// process group of its own, so that the console's Ctrl-C is not sent to it.
#[cfg(windows)]
pub(crate) fn shell(command: &str) -> Command {
    use std::os::windows::process::CommandExt as _;
    const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
    let cmd = std::env::var_os("ComSpec").unwrap_or_else(|| "cmd.exe".into());
    let mut shell = Command::new(cmd);
    shell.raw_arg(format!("/D /S /C \"{command}\"")).creation_flags(CREATE_NEW_PROCESS_GROUP);
    shell
}

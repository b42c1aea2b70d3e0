//! Credentials that change during a run: headers read from a file again
//! whenever it changes (`-H @FILE`), and the bearer token that `--auth-cmd`
//! makes, run again before it expires and after a 401. One [`Credentials`]
//! is shared by every loop of a run: several URLs share one token, and loops
//! that see a 401 together run the command once (one refresh per
//! generation, as client-go's exec plugins do).
//!
//! Secrets never leave this module in words: errors name the command's exit
//! status and the last line of its stderr (tokens known to this run
//! redacted), never its stdout or the command line itself.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::Error;
use crate::http::request::{Request, is_credential};
use crate::process::child::{self, Bounds, Output, Stopped};
use crate::util::headers::Headers;
use crate::util::sync::lock;
use crate::util::text::printable;
use crate::util::url::REDACTED;
use crate::util::wait::Cancel;
use crate::util::{file, parse};

/// The longest a run of `--auth-cmd` may take.
pub(crate) const COMMAND_LIMIT: Duration = Duration::from_secs(30);

/// For the tests, not users: a shorter [`COMMAND_LIMIT`] in milliseconds, so that the test of a
/// command that runs too long need not wait 30 s. Read once, in [`AuthCommand::new`].
const LIMIT_FOR_TESTS: &str = "POLL_TEST_AUTH_CMD_LIMIT_MS";

/// An `ExecCredential` token is made again when less than this is left of its life.
pub(crate) const EXPIRY_MARGIN: Duration = Duration::from_secs(60);

/// What an exec plugin is told of its caller, as client-go does
/// (`KUBERNETES_EXEC_INFO`): no terminal to prompt on.
const EXEC_INFO: &str =
    r#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","spec":{"interactive":false}}"#;

/// How a loop lets this module speak and stop: warnings, a new token (to
/// mask it, as a GitHub workflow command, and to say when it expires), and
/// the end of the run.
pub(crate) struct Hooks<'a> {
    pub warn: &'a dyn Fn(&str),
    /// Called with each new token (before it is used) and its expiry; `true` when it was never seen before.
    pub made: &'a dyn Fn(&str, Option<SystemTime>, bool),
    pub cancel: &'a Cancel,
    /// `--timeout`: a command still running then is killed, and the run ends with exit 1.
    pub deadline: Option<Instant>,
}

/// The credentials of a run: `-H @FILE`s and `--auth-cmd`.
#[derive(Default)]
pub(crate) struct Credentials {
    files: Vec<HeaderFile>,
    command: Option<AuthCommand>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the headers or the token.
        let files: Vec<&Path> = self.files.iter().map(|file| file.path.as_path()).collect();
        f.debug_struct("Credentials").field("files", &files).field("auth_cmd", &self.command.is_some()).finish()
    }
}

/// The request of one attempt, credentials in, and the token generation it carries.
pub(crate) struct Authorised {
    pub request: Request,
    /// `Some` when the request carries `--auth-cmd`'s token: the generation
    /// to name when it is refused.
    pub generation: Option<u64>,
}

impl Credentials {
    /// Reads every `-H @FILE` once (a file that cannot be read or parsed is
    /// a usage error); `command` is run later, before the first request.
    pub(crate) fn new(
        files: &[PathBuf],
        command: Option<String>,
        until: Option<Instant>,
    ) -> Result<Credentials, Error> {
        let files = files.iter().map(|path| HeaderFile::open(path, until)).collect::<Result<Vec<_>, _>>()?;
        if command.is_some()
            && let Some(file) = files.iter().find(|file| file.current().contains("authorization"))
        {
            return Err(Error::usage(format!(
                "--auth-cmd: `{}` (-H @FILE) sets Authorization too; give one of them",
                file.path.display()
            )));
        }
        let command = command.map(AuthCommand::new);
        Ok(Credentials { files, command })
    }

    /// Whether there is anything to add to requests.
    pub(crate) fn is_empty(&self) -> bool {
        self.files.is_empty() && self.command.is_none()
    }

    /// `request` with the headers of this moment: the files' (read again if
    /// they changed) and the token (made again if it is about to expire).
    /// `carry` says whether the request may carry credentials at all (a
    /// `--submit` status URL on another origin may not); without it the
    /// files' credential headers stay out and no token is made.
    pub(crate) fn authorise(&self, request: &Request, carry: bool, hooks: &Hooks) -> Result<Authorised, Error> {
        let mut extra = Headers::default();
        for file in &self.files {
            for (name, value) in file.refreshed(hooks).iter() {
                let credential = is_credential(name);
                let replaced = self.command.is_some() && name.eq_ignore_ascii_case("authorization");
                if (carry || !credential) && !replaced {
                    extra.push(name, value);
                }
            }
        }
        let mut generation = None;
        if let (Some(command), true) = (&self.command, carry) {
            let token = command.current(hooks)?;
            extra.push("Authorization", format!("Bearer {}", token.value));
            generation = Some(token.generation);
        }
        let mut request = request.clone();
        // The files' headers and the token replace any of the same name.
        request.headers.replace_with(&extra);
        Ok(Authorised { request, generation })
    }

    /// After a 401 to a request that carried token `generation`: the command
    /// runs again, unless another loop already made a newer token.
    pub(crate) fn refused(&self, generation: u64, hooks: &Hooks) -> Result<(), Error> {
        match &self.command {
            Some(command) => command.refresh(generation, hooks).map(drop),
            None => Ok(()),
        }
    }
}

/// One `-H @FILE`: its headers, and what the file looked like when read.
struct HeaderFile {
    path: PathBuf,
    state: Mutex<FileState>,
}

struct FileState {
    /// Modification time, size, device and inode when last read.
    seen: Option<(SystemTime, u64, u64, u64)>,
    headers: Headers,
    /// The file cannot be read now, and a warning said so.
    warned: bool,
}

impl HeaderFile {
    fn open(path: &Path, until: Option<Instant>) -> Result<HeaderFile, Error> {
        let usage = |why: String| Error::usage(format!("--header @{}: {why}", path.display()));
        let seen = std::fs::metadata(path).map(|m| stamp(&m)).map_err(|e| usage(format!("cannot read it: {e}")))?;
        let headers = read_headers(path, until).map_err(usage)?;
        let state = FileState { seen: Some(seen), headers, warned: false };
        Ok(HeaderFile { path: path.to_path_buf(), state: Mutex::new(state) })
    }

    fn current(&self) -> Headers {
        lock(&self.state).headers.clone()
    }

    /// The headers, read again first when the file changed. A file that
    /// cannot be read (or parsed) keeps the last headers, with one warning
    /// until it can be read again.
    fn refreshed(&self, hooks: &Hooks) -> Headers {
        let mut state = lock(&self.state);
        let read = std::fs::metadata(&self.path).map(|m| stamp(&m)).map_err(|e| format!("cannot read it: {e}"));
        let read = match read {
            Ok(seen) if state.seen == Some(seen) => return state.headers.clone(),
            Ok(seen) => read_headers(&self.path, hooks.deadline).map(|headers| (seen, headers)),
            Err(why) => Err(why),
        };
        match read {
            Ok((seen, headers)) => {
                *state = FileState { seen: Some(seen), headers, warned: false };
            }
            Err(why) if !state.warned => {
                state.warned = true;
                (hooks.warn)(&format!(
                    "--header @{}: {why}; the headers read before go on being sent",
                    self.path.display()
                ));
            }
            Err(_) => {}
        }
        state.headers.clone()
    }
}

fn stamp(metadata: &std::fs::Metadata) -> (SystemTime, u64, u64, u64) {
    let (device, inode) = file::identity(metadata);
    (metadata.modified().unwrap_or(UNIX_EPOCH), metadata.len(), device, inode)
}

/// curl's `-H @FILE`: one `Name: value` a line, CR and LF both end a line,
/// empty lines are skipped. A line that is no header is named by its number
/// only: it may hold a secret.
fn read_headers(path: &Path, until: Option<Instant>) -> Result<Headers, String> {
    // At most 16 MiB, and from a FIFO no longer than the run's deadline.
    let text = file::read_bounded(path, until).map_err(|e| format!("cannot read it: {e}"))?;
    let text = String::from_utf8(text).map_err(|_| "it is not UTF-8 text".to_string())?;
    let mut headers = Headers::default();
    for (number, line) in text.split('\n').enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let (name, value) =
            parse::header(line).map_err(|_| format!("line {} is not a header 'Name: value'", number + 1))?;
        headers.push(name, value);
    }
    Ok(headers)
}

/// `--auth-cmd`: the command, and the token it made last.
struct AuthCommand {
    command: String,
    /// How long one run may take: [`COMMAND_LIMIT`], or the tests' shorter one.
    limit: Duration,
    state: Mutex<TokenState>,
}

#[derive(Default)]
struct TokenState {
    token: Option<Token>,
    /// How many tokens the command made; the token in use is this generation.
    generation: u64,
    /// The run that failed, kept so that loops waiting for it do not run it again.
    failed: Option<Error>,
    /// Every token made so far, to mask them in the command's stderr.
    known: Vec<String>,
    /// An expiry inside the margin was reported once.
    warned_short: bool,
}

#[derive(Clone)]
struct Token {
    value: String,
    expires: Option<SystemTime>,
    generation: u64,
}

impl AuthCommand {
    fn new(command: String) -> AuthCommand {
        let limit = command_limit(std::env::var(LIMIT_FOR_TESTS).ok().as_deref());
        AuthCommand { command, limit, state: Mutex::new(TokenState::default()) }
    }

    /// The token to send now: made on first use, and again when less than
    /// [`EXPIRY_MARGIN`] of its life is left. Loops wait for each other here.
    fn current(&self, hooks: &Hooks) -> Result<Token, Error> {
        let mut state = lock(&self.state);
        if let Some(error) = &state.failed {
            return Err(error.clone());
        }
        match &state.token {
            Some(token) if !expiring(token.expires, SystemTime::now()) => Ok(token.clone()),
            _ => self.make(&mut state, hooks),
        }
    }

    /// A 401 to token `generation`: make a new one, unless that was done already.
    fn refresh(&self, generation: u64, hooks: &Hooks) -> Result<Token, Error> {
        let mut state = lock(&self.state);
        if let Some(error) = &state.failed {
            return Err(error.clone());
        }
        match &state.token {
            Some(token) if token.generation != generation => Ok(token.clone()),
            _ => self.make(&mut state, hooks),
        }
    }

    fn make(&self, state: &mut TokenState, hooks: &Hooks) -> Result<Token, Error> {
        let bounds = Bounds { limit: self.limit, deadline: hooks.deadline, cancel: hooks.cancel };
        let made = match child::run(&self.command, &[("KUBERNETES_EXEC_INFO", EXEC_INFO)], &bounds) {
            Ok(output) if !output.success => Err(failure("failed", &output, &state.known)),
            Ok(output) => parse_output(&output.stdout).map_err(|why| failure(&why, &output, &state.known)),
            Err(Stopped::Cancelled) => Err(Error::permanent("--auth-cmd: the run ended while it ran")),
            Err(Stopped::Deadline) => Err(Error::deadline(
                "deadline reached while --auth-cmd ran; it was killed (raise --timeout to wait longer)",
            )),
            Err(Stopped::TooLong { stderr }) => Err(Error::permanent(format!(
                "--auth-cmd: ran longer than {} and was killed{}",
                humantime::format_duration(self.limit),
                last_line(&stderr, &state.known)
            ))),
            Err(Stopped::TooLarge(stream)) => Err(Error::permanent(format!(
                "--auth-cmd printed more than {} MiB on {stream}; it was ended",
                file::MAX_READ >> 20
            ))),
            Err(Stopped::Failed(why)) => Err(Error::permanent(format!("--auth-cmd: {why}"))),
            Err(Stopped::AtTerminal { tried, by }) => Err(Error::permanent(format!(
                "--auth-cmd tried to {tried} and was stopped ({by}): it runs in a process group of its own, which the \
                 terminal does not answer; it was ended"
            ))
            .hint(
                "; have it print its token without asking (log in before poll runs), or give the token with -H @FILE",
            )),
        };
        let (value, expires) = match made {
            Ok(made) => made,
            Err(error) => {
                state.failed = Some(error.clone());
                return Err(error);
            }
        };
        let new = !state.known.contains(&value);
        if new {
            state.known.push(value.clone());
        }
        // Before anything else could show it.
        (hooks.made)(&value, expires, new);
        if expiring(expires, SystemTime::now()) && !state.warned_short {
            state.warned_short = true;
            (hooks.warn)(&format!(
                "--auth-cmd: its token expires in less than {}s, so it runs again before every attempt",
                EXPIRY_MARGIN.as_secs()
            ));
        }
        state.generation += 1;
        let token = Token { value, expires, generation: state.generation };
        state.token = Some(token.clone());
        Ok(token)
    }
}

/// [`COMMAND_LIMIT`], or the shorter one `value` (the [`LIMIT_FOR_TESTS`] variable) gives in
/// milliseconds; a value that is no number of them, or no shorter, is ignored.
fn command_limit(value: Option<&str>) -> Duration {
    let shorter = value.and_then(|ms| ms.parse().ok()).map(Duration::from_millis);
    shorter.filter(|limit| !limit.is_zero() && *limit < COMMAND_LIMIT).unwrap_or(COMMAND_LIMIT)
}

fn expiring(expires: Option<SystemTime>, now: SystemTime) -> bool {
    expires.is_some_and(|expires| expires.duration_since(now).map_or(true, |left| left < EXPIRY_MARGIN))
}

/// The error for a command whose output gave no token: `why`, its exit
/// status and the last line of its stderr.
fn failure(why: &str, output: &Output, known: &[String]) -> Error {
    Error::permanent(format!("--auth-cmd {why} ({}){}", output.status, last_line(&output.stderr, known)))
}

/// `: LINE`, the last non-empty line of `stderr`, with every token known so
/// far redacted and control characters escaped; empty when there is none.
fn last_line(stderr: &[u8], known: &[String]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let Some(line) = text.lines().map(str::trim).rfind(|line| !line.is_empty()) else {
        return "; nothing on stderr".to_string();
    };
    let mut line = line.to_string();
    for token in known {
        line = line.replace(token.as_str(), REDACTED);
    }
    let line: String = line.chars().take(300).collect();
    format!(": {}", printable(&line))
}

/// The token in the command's stdout: the whole of it trimmed, or a
/// Kubernetes `ExecCredential`'s `status.token` (with its expiry).
fn parse_output(stdout: &[u8]) -> Result<(String, Option<SystemTime>), String> {
    let text = std::str::from_utf8(stdout).map_err(|_| "printed a token that is not UTF-8".to_string())?;
    let text = text.trim();
    if text.is_empty() {
        return Err("printed no token".into());
    }
    let (token, expires) = if text.starts_with('{') {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|_| "printed JSON that does not parse".to_string())?;
        let status = &value["status"];
        let Some(token) = status["token"].as_str().filter(|token| !token.trim().is_empty()) else {
            return Err("printed JSON that is no ExecCredential with a status.token".into());
        };
        let expires = match &status["expirationTimestamp"] {
            serde_json::Value::Null => None,
            serde_json::Value::String(stamp) => {
                Some(rfc3339(stamp).ok_or("printed an ExecCredential whose expirationTimestamp is not RFC 3339")?)
            }
            _ => return Err("printed an ExecCredential whose expirationTimestamp is not a string".into()),
        };
        (token.trim().to_string(), expires)
    } else {
        (text.to_string(), None)
    };
    if parse::check_header_value("Authorization", &token).is_err() || token.contains(' ') {
        return Err("printed more than one token (a space or a control character in it)".into());
    }
    // A header carries ASCII alone: such a token could never be sent, so it is not tried.
    if !token.is_ascii() {
        return Err("printed a token with a character that is not ASCII, which no header can carry".into());
    }
    Ok((token, expires))
}

/// An RFC 3339 date-time (`2026-12-01T10:00:00Z`, `...T10:00:00.5+02:00`,
/// `t`/`z` in lower case too), as a point in time, read by jiff (in the tree
/// through jaq's date functions); `None` if it is not one.
pub(crate) fn rfc3339(text: &str) -> Option<SystemTime> {
    text.parse::<jiff::Timestamp>().ok().map(SystemTime::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn only_the_tests_variable_shortens_the_commands_limit_and_a_value_it_cannot_use_is_ignored() {
        assert_eq!(command_limit(None), COMMAND_LIMIT);
        assert_eq!(command_limit(Some("1000")), Duration::from_secs(1));
        assert_eq!(command_limit(Some("250")), Duration::from_millis(250));
        for ignored in ["", "1s", "-5", " 1000", "1e3", "0", "30000", "60000", "99999999999999999999"] {
            assert_eq!(command_limit(Some(ignored)), COMMAND_LIMIT, "{ignored:?}");
        }
    }

    #[test]
    fn rfc3339_times_parse_with_fractions_and_offsets() {
        assert_eq!(rfc3339("1970-01-01T00:00:00Z"), Some(at(0)));
        assert_eq!(rfc3339("2026-12-01T10:00:00Z"), Some(at(1_796_119_200)));
        assert_eq!(rfc3339("2026-12-01t10:00:00z"), Some(at(1_796_119_200)));
        assert_eq!(rfc3339("2026-12-01T12:30:00+02:30"), Some(at(1_796_119_200)));
        assert_eq!(rfc3339("2026-12-01T08:00:00-02:00"), Some(at(1_796_119_200)));
        assert_eq!(rfc3339("2024-02-29T00:00:00Z"), Some(at(1_709_164_800)));
        assert_eq!(rfc3339("2026-12-01T10:00:00.25Z"), Some(at(1_796_119_200) + Duration::from_millis(250)));
        assert_eq!(
            rfc3339("2026-12-01T10:00:00.123456789Z"),
            Some(at(1_796_119_200) + Duration::from_nanos(123_456_789))
        );
        // What ISO 8601 allows besides, jiff reads too: no seconds, an offset without its colon.
        assert_eq!(rfc3339("2026-12-01T10:00Z"), Some(at(1_796_119_200)));
        assert_eq!(rfc3339("2026-12-01T12:00:00+0200"), Some(at(1_796_119_200)));
        for bad in [
            "",
            "2026-12-01",
            "2026-12-01T10:00:00",
            "2026-13-01T10:00:00Z",
            "2025-02-29T10:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T10:00:00.Z",
            "2026-12-01T10:00:00Z ",
            "+026-12-01T10:00:00Z",
            "2026-12-01X10:00:00Z",
            "２026-12-01T10:00:00Z",
            "2026-12-01T10:00:00.123456789123Z",
        ] {
            assert_eq!(rfc3339(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_token_is_stdout_trimmed_or_an_exec_credential() {
        assert_eq!(parse_output(b"  tok-1\n"), Ok(("tok-1".into(), None)));
        let exec = br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential",
            "status":{"token":"tok-2","expirationTimestamp":"1970-01-01T00:01:40Z"}}"#;
        assert_eq!(parse_output(exec), Ok(("tok-2".into(), Some(at(100)))));
        assert_eq!(parse_output(br#"{"status":{"token":"tok-3"}}"#), Ok(("tok-3".into(), None)));
        for (bad, why) in [
            (&b"\n \n"[..], "printed no token"),
            (b"zzq\nzzq", "more than one token"),
            (b"Bearer zzq", "more than one token"),
            (br#"{"token":"zzq"}"#, "no ExecCredential"),
            (br#"{"status":{"token":"zzq","expirationTimestamp":"zzq"}}"#, "not RFC 3339"),
            (b"{zzq", "does not parse"),
        ] {
            let Err(e) = parse_output(bad) else { panic!("{bad:?} is accepted") };
            assert!(e.contains(why), "{e}");
            assert!(!e.contains("zzq"), "stdout is never quoted: {e}");
        }
    }

    #[test]
    fn a_token_is_made_again_inside_the_margin() {
        let now = at(1000);
        assert!(!expiring(None, now));
        assert!(!expiring(Some(at(1061)), now));
        assert!(expiring(Some(at(1059)), now));
        assert!(expiring(Some(at(10)), now), "already expired");
    }

    #[test]
    fn the_last_stderr_line_hides_known_tokens() {
        let known = vec!["tok-1".to_string()];
        assert_eq!(last_line(b"first\nlast tok-1 here\n\n", &known), ": last <redacted> here");
        assert_eq!(last_line(b"", &known), "; nothing on stderr");
        assert_eq!(last_line(b"a\x1b[31m\n", &[]), r": a\u{1b}[31m");
    }
}

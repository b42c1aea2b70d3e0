//! Flags -> the validated run configuration. Every input error (URL, method,
//! header, body, certificate, filter, output path, state store) surfaces
//! here, before the first request.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;

use crate::cli::flags::{CiArg, Cli, ColorArg, JitterArg, LimitArgs, LogFormatArg, StateFailArg};
use crate::http::credentials::Credentials;
use crate::http::request::{ClientConfig, Request};
use crate::report::output::{ColorChoice, Style};
use crate::rules::breaker;
use crate::rules::condition::{Args, Builtin, Conditions, Filter};
use crate::rules::policy::{Jitter, Phase, Policy};
use crate::state::{RedisUrl, StateFail};
use crate::util::error::Error;
use crate::util::exec::Command;
use crate::util::text::shorten;
use crate::util::url;
use crate::util::{file, parse};

/// Everything a run needs, checked.
#[derive(Debug)]
pub struct Config {
    /// One per URL, in the order given.
    pub(crate) targets: Vec<Target>,
    pub(crate) client: ClientConfig,
    /// Conditional polls (`--no-conditional` turns them off).
    pub(crate) conditional: bool,
    pub(crate) conditions: Conditions,
    /// `--print`.
    pub(crate) print: Option<Filter>,
    pub(crate) policy: Policy,
    /// `--submit`: the first request starts an operation.
    pub(crate) submit: Option<Submit>,
    /// `--idempotency-key` (`auto` made into its UUID), when requests carry it:
    /// the JSON log shows it, so that a failed run can be re-run with the same key.
    pub(crate) idempotency_key: Option<String>,
    /// `--timeout`; `None` for 0 (no deadline).
    pub(crate) timeout: Option<Duration>,
    /// `--any`: one URL done is enough.
    pub(crate) any: bool,
    /// `-o`: the final output goes here instead of stdout.
    pub(crate) output_file: Option<PathBuf>,
    pub(crate) style: Style,
    pub(crate) limits: Limits,
    /// `-- CMD`: what runs in poll's place after exit 0.
    pub(crate) command: Option<Command>,
}

/// One URL and what its loop needs of its own.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The request as given (the submit, with `--submit`).
    pub request: Request,
    /// Where its shared state is kept: `--state-key`, or its origin.
    pub key: String,
    /// Which request the first attempt sends.
    pub phase: Phase,
    /// `-H @FILE` and `--auth-cmd`, one for the whole run.
    pub credentials: Arc<Credentials>,
}

/// `--submit`'s settings.
#[derive(Debug)]
pub(crate) struct Submit {
    /// `--status-url`.
    pub status_url: Option<Filter>,
    /// `--location-trusted`.
    pub trusted: bool,
    /// The idempotency header's name, which status polls do not send.
    pub key_header: Option<String>,
}

/// `--rate`, `--state`, the circuit breaker and `--fallback`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Limits {
    /// `--rate`, as the spacing between two requests.
    pub rate: Option<Duration>,
    pub state: Option<StateSpec>,
    pub state_fail: StateFail,
    pub breaker: breaker::Settings,
    pub fallback: Option<Fallback>,
}

/// Where `--state` keeps the shared state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum StateSpec {
    /// A file whose folder exists.
    File(PathBuf),
    /// A Redis server, by a URL that parses (a unix socket need not exist yet).
    Redis(RedisUrl),
}

/// `--fallback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fallback {
    /// A JSON body (given inline or from a file), already validated.
    Body(Vec<u8>),
    /// The last good body of this URL kept in `--state`.
    Last,
}

impl Config {
    /// Validates the flags; `stdin` is read only for `@-`.
    pub(crate) fn from_cli(mut cli: Cli, stdin: &mut dyn Read) -> Result<Config, Error> {
        // A FIFO given as a file (`-d @<(cmd)`) is read until the run's deadline at the latest.
        let until = (!cli.timeout.is_zero()).then(|| Instant::now() + *cli.timeout);
        let user_agent = cli.user_agent.take().unwrap_or_else(|| format!("poll/{}", env!("CARGO_PKG_VERSION")));
        parse::check_header_value("User-Agent", &user_agent).map_err(|e| usage("--user-agent", e))?;
        if let Some(user) = &cli.user {
            parse::check_header_value("Authorization", user).map_err(|e| usage("--user", e))?;
        }

        // `-H @FILE` (see flags.rs) is kept apart: read now, and again whenever it changes.
        let (files, mut headers): (Vec<_>, Vec<_>) =
            std::mem::take(&mut cli.headers).into_iter().partition(|(name, _)| name == crate::cli::flags::HEADER_FILE);
        let files: Vec<PathBuf> = files.into_iter().map(|(_, path)| PathBuf::from(path)).collect();
        if cli.auth_cmd.is_some() && headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization")) {
            return Err(usage("--auth-cmd", "cannot be used with -H 'Authorization: ...'; give one of them"));
        }
        if cli.auth_cmd.as_deref().is_some_and(|command| command.trim().is_empty()) {
            return Err(usage("--auth-cmd", "the command is empty"));
        }
        let auth = Arc::new(Credentials::new(&files, cli.auth_cmd.clone(), until)?);
        let body = match (cli.data.take(), cli.json.take()) {
            (Some(data), _) => {
                let body = read_body("--data", &data, stdin, until)?;
                // As curl -d; `-H 'Content-Type: ...'` replaces it.
                set_default(&mut headers, "Content-Type", "application/x-www-form-urlencoded");
                Some(body)
            }
            (None, Some(json)) => {
                let body = read_body("--json", &json, stdin, until)?;
                check_json("--json", &body)?;
                set_default(&mut headers, "Content-Type", "application/json");
                set_default(&mut headers, "Accept", "application/json");
                Some(body)
            }
            (None, None) => None,
        };
        let method = match cli.method.take() {
            Some(method) => parse::method(&method).map_err(|e| usage("--request", e))?,
            None if cli.head => "HEAD".to_string(),
            None if body.is_some() => "POST".to_string(),
            None => "GET".to_string(),
        };
        let idempotent = is_idempotent(&method);

        // The key goes on every attempt of a request that may have been
        // processed: a POST/PATCH, or the submit whatever its method.
        let key = match cli.idempotency_key.as_deref() {
            None => None,
            Some("auto") => Some(uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string()),
            Some(key) => {
                parse::check_header_value(&cli.idempotency_header, key).map_err(|e| usage("--idempotency-key", e))?;
                Some(key.to_string())
            }
        };
        if key.is_some() {
            parse::header(&format!("{}: x", cli.idempotency_header)).map_err(|e| usage("--idempotency-header", e))?;
        }
        let keyed = key.is_some() && (cli.submit || !idempotent);
        if let (true, Some(key)) = (keyed, &key) {
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case(&cli.idempotency_header));
            headers.push((cli.idempotency_header.clone(), key.clone()));
        }

        // RFC 7240 counts the wait in whole seconds; a part of one is rounded up.
        let prefer_wait = match cli.prefer_wait.map(|d| *d) {
            Some(wait) if wait.is_zero() => return Err(usage("--prefer-wait", "must be longer than 0")),
            Some(wait) => {
                let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
                headers.push(("Prefer".into(), format!("wait={seconds}")));
                Some(Duration::from_secs(seconds))
            }
            None => None,
        };

        let limits = check_limits(&cli.limits, stdin, until)?;
        if cli.urls.len() > 1 && limits.fallback.is_some() {
            return Err(usage("--fallback", "stands in for one URL's body; it cannot be used with several URLs"));
        }

        let mut targets = Vec::with_capacity(cli.urls.len());
        for raw in &cli.urls {
            let (url, credentials) = url::check(raw).map_err(Error::Usage)?;
            if credentials.is_some() && cli.auth_cmd.is_some() {
                return Err(usage(
                    "--auth-cmd",
                    "cannot be used with credentials in the URL (user:password@); give one of them",
                ));
            }
            let mut headers = headers.clone();
            // As curl: an `Authorization` the user wrote with -H wins over -u and the URL's.
            let written = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
            if let (Some(credentials), false) = (cli.user.clone().or(credentials), written) {
                let credentials = if credentials.contains(':') { credentials } else { format!("{credentials}:") };
                let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
                headers.push(("Authorization".into(), format!("Basic {encoded}")));
            }
            let key = cli.limits.state_key.clone().unwrap_or_else(|| url::origin_key(&url));
            let phase = if cli.submit { Phase::Submit } else { Phase::Poll };
            let see_other_is_the_answer = cli.submit;
            let request = Request { method: method.clone(), url, headers, body: body.clone(), see_other_is_the_answer };
            targets.push(Target { request, key, phase, credentials: Arc::clone(&auth) });
        }

        let urls: Vec<&str> = targets.iter().map(|target: &Target| target.request.url.as_str()).collect();
        // Over a Unix socket the proxy variables are not read, so not checked.
        if let Some(path) = &cli.unix_socket {
            crate::http::unix::check(path).map_err(|e| usage("--unix-socket", e))?;
        } else {
            crate::http::proxy::Proxies::check_env(&urls).map_err(Error::Usage)?;
        }
        let cacert = cli.cacert.as_deref().map(|path| read_cacert(path, until)).transpose()?;

        let args = jq_args(&cli)?;
        let conditions = conditions(&cli, &args)?;
        let print = cli.print.as_deref().map(|f| compile("--print", f, &args)).transpose()?;
        let submit = cli.submit.then(|| -> Result<Submit, Error> {
            Ok(Submit {
                status_url: cli.status_url.as_deref().map(|f| compile("--status-url", f, &args)).transpose()?,
                trusted: cli.location_trusted,
                key_header: keyed.then(|| cli.idempotency_header.clone()),
            })
        });
        let submit = submit.transpose()?;

        if let Some(output) = &cli.output {
            file::check_writable(output).map_err(|e| usage("--output", e))?;
        }

        let policy = policy(&cli, idempotent, keyed)?;
        let command = (!cli.command.is_empty()).then(|| Command::find(&cli.command)).transpose()?;
        let timeout = (!cli.timeout.is_zero()).then_some(*cli.timeout);

        Ok(Config {
            targets,
            client: ClientConfig {
                user_agent,
                connect_timeout: *cli.connect_timeout,
                // A long poll is held up to --prefer-wait before it answers.
                request_timeout: cli.request_timeout.saturating_add(prefer_wait.unwrap_or_default()),
                max_redirects: cli.max_redirs,
                max_body: cli.max_body.0,
                insecure: cli.insecure,
                cacert,
                unix_socket: cli.unix_socket.take(),
            },
            conditional: !cli.no_conditional,
            conditions,
            print,
            policy,
            submit,
            idempotency_key: key.filter(|_| keyed),
            timeout,
            any: cli.any,
            output_file: cli.output.take(),
            style: style(&cli, timeout),
            limits,
            command,
        })
    }
}

/// The filters of `--until`, `--fail-when` and `--show`, with `--submit`'s
/// built-ins for what the user did not give.
fn conditions(cli: &Cli, args: &Args) -> Result<Conditions, Error> {
    let given =
        |flag: &'static str, source: &Option<String>| source.as_deref().map(|f| compile(flag, f, args)).transpose();
    let (until, fail_when) = (given("--until", &cli.until)?, given("--fail-when", &cli.fail_when)?);
    // With --submit, what the user did not give is built in.
    let builtin = cli.submit.then(Builtin::new);
    let builtin = builtin.transpose().map_err(|e| Error::Usage(format!("the built-in conditions: {e}")))?;
    let show = given("--show", &cli.show)?;
    Ok(Conditions { until, fail_when, show, builtin })
}

/// `--arg NAME VALUE` and `--argjson NAME JSON`, bound in every filter.
fn jq_args(cli: &Cli) -> Result<Args, Error> {
    let mut args = Args::default();
    for pair in cli.args.chunks(2) {
        if let [name, value] = pair {
            args.text(name, value).map_err(|e| usage("--arg", e))?;
        }
    }
    for pair in cli.argjson.chunks(2) {
        if let [name, json] = pair {
            args.json(name, json).map_err(|e| usage("--argjson", e))?;
        }
    }
    Ok(args)
}

/// The status lists: a status may be in one of `--done-on`, `--pending-on`,
/// `--fail-on` and `--retry-on` only, or the run could not say what it means.
fn check_status_lists(cli: &Cli) -> Result<(), Error> {
    let lists = [
        ("--done-on", &cli.done_on),
        ("--pending-on", &cli.pending_on),
        ("--fail-on", &cli.fail_on),
        ("--retry-on", &cli.retry_on),
    ];
    for (i, (flag, codes)) in lists.iter().enumerate() {
        for (other, other_codes) in &lists[i + 1..] {
            if let Some(code) = codes.iter().find(|code| other_codes.contains(code)) {
                return Err(usage(flag, format!("{code} is in {other} too; give each status one meaning")));
            }
        }
    }
    Ok(())
}

/// The schedule and retry rules `decide()` follows.
fn policy(cli: &Cli, idempotent: bool, keyed: bool) -> Result<Policy, Error> {
    if let Some(max) = cli.interval_max.filter(|max| **max < *cli.interval) {
        return Err(usage("--interval-max", format!("{max} is shorter than --interval {}", cli.interval)));
    }
    if *cli.backoff_max < *cli.backoff {
        return Err(usage("--backoff-max", format!("{} is shorter than --backoff {}", cli.backoff_max, cli.backoff)));
    }
    check_status_lists(cli)?;

    Ok(Policy {
        interval: *cli.interval,
        backoff: *cli.backoff,
        backoff_max: *cli.backoff_max,
        jitter: match cli.jitter {
            JitterArg::Equal => Jitter::Equal,
            JitterArg::Full => Jitter::Full,
            JitterArg::None => Jitter::None,
        },
        retries: cli.retries,
        retry_on: cli.retry_on.clone(),
        idempotent,
        retry_non_idempotent: cli.retry_non_idempotent,
        keyed,
        stable: cli.stable,
        interval_max: cli.interval_max.map(|max| *max),
        done_on: cli.done_on.clone(),
        pending_on: cli.pending_on.clone(),
        fail_on: cli.fail_on.clone(),
        // With --submit the built-in test stands in for --until.
        no_until: cli.until.is_none() && !cli.submit,
    })
}

/// How the run reports: `-v`, `-q`, the log format, colour and the CI it runs in.
fn style(cli: &Cli, timeout: Option<Duration>) -> Style {
    Style {
        verbose: cli.verbose,
        quiet: cli.quiet,
        json: cli.log_format == LogFormatArg::Json,
        color: match cli.color {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        },
        github: github_actions(cli.ci),
        gitlab: gitlab_ci(cli.ci),
        deadline: timeout,
    }
}

/// Whether messages are GitHub workflow commands: `--ci`, else `GITHUB_ACTIONS=true`.
pub(crate) fn github_actions(ci: Option<CiArg>) -> bool {
    match ci {
        Some(CiArg::Github) => true,
        Some(CiArg::Gitlab | CiArg::None) => false,
        None => std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true"),
    }
}

/// Whether `-v` lines sit in GitLab's collapsed sections: `--ci gitlab`, else
/// `GITLAB_CI=true` (when GitHub Actions is not also claimed).
pub(crate) fn gitlab_ci(ci: Option<CiArg>) -> bool {
    match ci {
        Some(CiArg::Gitlab) => true,
        Some(CiArg::Github | CiArg::None) => false,
        None => !github_actions(None) && std::env::var("GITLAB_CI").is_ok_and(|v| v == "true"),
    }
}

fn usage(flag: &str, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{flag}: {message}"))
}

/// Methods that may be re-sent safely. Unknown methods are treated like POST.
fn is_idempotent(method: &str) -> bool {
    matches!(method.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE")
}

fn set_default(headers: &mut Vec<(String, String)>, name: &str, value: &str) {
    if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
        headers.push((name.to_string(), value.to_string()));
    }
}

/// `DATA`, `@file` or `@-`, at most 16 MiB of it.
fn read_body(flag: &str, value: &str, stdin: &mut dyn Read, until: Option<Instant>) -> Result<Vec<u8>, Error> {
    match value.strip_prefix('@') {
        Some("-") => file::read_at_most(stdin).map_err(|e| usage(flag, format!("cannot read stdin: {e}"))),
        Some(path) => {
            file::read_bounded(Path::new(path), until).map_err(|e| usage(flag, format!("cannot read `{path}`: {e}")))
        }
        None => Ok(value.as_bytes().to_vec()),
    }
}

fn check_json(flag: &str, body: &[u8]) -> Result<(), Error> {
    serde_json::from_slice::<serde::de::IgnoredAny>(body)
        .map(|_| ())
        .map_err(|e| usage(flag, format!("body is not valid JSON: {e}")))
}

fn read_cacert(path: &Path, until: Option<Instant>) -> Result<Vec<u8>, Error> {
    let shown = path.display();
    let pem = file::read_bounded(path, until).map_err(|e| usage("--cacert", format!("cannot read `{shown}`: {e}")))?;
    let certificates =
        ureq::tls::parse_pem(&pem).filter(|item| matches!(item, Ok(ureq::tls::PemItem::Certificate(_)))).count();
    if certificates == 0 {
        return Err(usage("--cacert", format!("`{shown}` holds no PEM certificate")));
    }
    Ok(pem)
}

fn compile(flag: &'static str, source: &str, args: &Args) -> Result<Filter, Error> {
    // Quote a long filter by its start only: the error line stays one readable line.
    let compiled = Filter::compile_for(flag, source, args);
    compiled.map_err(|e| usage(flag, format!("`{}` does not compile: {e}", shorten(source))))
}

/// The rate-limit, shared-state and fallback flags.
fn check_limits(cli: &LimitArgs, stdin: &mut dyn Read, until: Option<Instant>) -> Result<Limits, Error> {
    let state = cli.state.as_deref().map(check_state).transpose()?;
    let window = usize::try_from(cli.breaker_window).unwrap_or(usize::MAX);
    if !(breaker::MIN_OUTCOMES..=1000).contains(&window) {
        return Err(usage(
            "--breaker-window",
            format!(
                "{window} is not between {} (the fewest outcomes the breaker judges) and 1000",
                breaker::MIN_OUTCOMES
            ),
        ));
    }
    for (flag, value) in [("--breaker-cooldown", cli.breaker_cooldown), ("--breaker-max-p95", cli.breaker_max_p95)] {
        if value.is_zero() {
            return Err(usage(flag, "must be longer than 0"));
        }
    }
    let fallback = match cli.fallback.as_deref() {
        None => None,
        Some("last") if state.is_none() => {
            return Err(usage("--fallback", "`last` needs --state, where the last good body is kept"));
        }
        Some("last") => Some(Fallback::Last),
        Some(value) => {
            let body = read_body("--fallback", value, stdin, until)?;
            check_json("--fallback", &body)?;
            Some(Fallback::Body(body))
        }
    };
    Ok(Limits {
        rate: cli.rate,
        state,
        state_fail: match cli.state_fail {
            StateFailArg::Open => StateFail::Open,
            StateFailArg::Closed => StateFail::Closed,
        },
        breaker: breaker::Settings {
            window,
            min_success: cli.breaker_min_success,
            max_p95: crate::util::clock::ms(*cli.breaker_max_p95),
            cooldown: crate::util::clock::ms(*cli.breaker_cooldown),
        },
        fallback,
    })
}

/// `--state FILE|URL`: a store URL that parses, or a regular file (or a new
/// one) in a folder that exists, that no other user may change
/// ([`file::check_private`]): neither it nor its lock may belong to someone
/// else or be writable by group or others, since `--fallback last` prints
/// what it keeps.
fn check_state(value: &str) -> Result<StateSpec, Error> {
    if RedisUrl::is_url(value) {
        return RedisUrl::parse(value).map(StateSpec::Redis).map_err(|e| usage("--state", e));
    }
    let path = PathBuf::from(value);
    file::check_writable(&path).map_err(|e| usage("--state", e))?;
    if std::fs::metadata(&path).is_ok_and(|meta| !meta.is_file()) {
        return Err(usage("--state", file::not_regular(&path)));
    }
    // The store checks the same again at every step (a name swapped mid-run).
    for part in [path.clone(), crate::state::FileStore::lock_path(&path)] {
        file::check_private(&part).map_err(|why| usage("--state", why))?;
    }
    Ok(StateSpec::File(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotent_methods() {
        for m in ["GET", "get", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            assert!(is_idempotent(m), "{m}");
        }
        for m in ["POST", "PATCH", "PURGE"] {
            assert!(!is_idempotent(m), "{m}");
        }
    }
}

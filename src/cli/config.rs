//! Flags -> the validated run configuration. Every input error (URL, method,
//! header, body, certificate, filter, output path, state store) surfaces
//! here, before the first request.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::cli::flags::{CiArg, Cli, ColorArg, DoneOn, HeaderArg, JitterArg, LimitArgs, LogFormatArg, StateFailArg};
use crate::error::Error;
use crate::http::credentials::Credentials;
use crate::http::request::{ClientConfig, Idle, Request};
use crate::net::roots;
use crate::net::tls::{self, Identity, Trust, Undecrypted};
use crate::process::exec::Command;
use crate::report::reporter::{ColorChoice, Style};
use crate::rules::attempt::Phase;
use crate::rules::breaker;
use crate::rules::bucket::Rate;
use crate::rules::budget::RetryBudget;
use crate::rules::condition::{Args, Builtin, Conditions, Filter};
use crate::rules::pages;
use crate::rules::policy::{Jitter, Policy};
use crate::rules::resume::Resume;
use crate::rules::trace::Trace;
use crate::state::{RedisUrl, StateFail};
use crate::util::headers::Headers;
use crate::util::text::shorten;
use crate::util::url::{self, Endpoint};
use crate::util::{file, parse};

/// Everything a run needs, checked.
#[derive(Debug)]
pub struct Config {
    /// One per URL, in the order given.
    pub(crate) targets: Vec<Target>,
    /// How every URL is polled.
    pub(crate) polling: Polling,
    /// `--idempotency-key` (`auto` made into its UUID), when requests carry it:
    /// the JSON log shows it, so that a failed run can be re-run with the same key.
    pub(crate) idempotency_key: Option<String>,
    /// `--timeout`; `None` for 0 (no deadline).
    pub(crate) timeout: Option<Duration>,
    /// `--any`: one URL done is enough.
    pub(crate) any: bool,
    /// `-o`: the final output goes here instead of stdout.
    pub(crate) output_file: Option<PathBuf>,
    /// `--report-junit`: the run's JUnit report goes here.
    pub(crate) junit: Option<PathBuf>,
    pub(crate) style: Style,
    pub(crate) limits: Limits,
    /// `-- CMD`: what runs in poll's place after exit 0 (with `--start`, as a child).
    pub(crate) command: Option<Command>,
    /// `--start`: the server the run starts, waits for and stops.
    pub(crate) start: Option<Start>,
}

/// `--start CMD` and `--start-grace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Start {
    /// The command line, run through the platform's shell.
    pub command: String,
    /// How long its group has between SIGTERM and SIGKILL.
    pub grace: Duration,
}

/// How every URL is polled: the same for each loop.
#[derive(Debug)]
pub(crate) struct Polling {
    pub client: ClientConfig,
    /// Conditional polls (`--no-conditional` turns them off).
    pub conditional: bool,
    pub conditions: Conditions,
    /// `--print`.
    pub print: Option<Filter>,
    /// `--pending-when`: a reply of a status no list names, not a 2xx, that is "not yet".
    pub pending_when: Option<Filter>,
    /// `--stall`: how long what the progress line shows may stay the same.
    pub stall: Option<Duration>,
    /// How long each request asks the server to hold it: `--prefer-wait`'s
    /// wait, and under `--watch` as long as it takes (`Duration::MAX`). A hold
    /// asked for is not latency for the breaker.
    pub hold: Duration,
    /// `TRACEPARENT`'s trace, which every request joins; or why it is not joined, for a warning.
    pub trace: Result<Option<Trace>, String>,
    pub policy: Policy,
    /// `--submit`: the first request starts an operation.
    pub submit: Option<Submit>,
    /// `--paginate`, `--next`: each attempt reads every page of a collection.
    pub pages: Option<Pages>,
}

impl Polling {
    /// How deeply the most deeply nested of the user's filters nests.
    pub fn filter_depth(&self) -> usize {
        self.user_filters().map(Filter::depth).max().unwrap_or(0)
    }

    /// Whether one of the user's filters defines something that can call itself.
    pub fn filters_recurse(&self) -> bool {
        self.user_filters().any(Filter::recurses)
    }

    fn user_filters(&self) -> impl Iterator<Item = &Filter> {
        let conditions = [&self.conditions.until, &self.conditions.fail_when, &self.conditions.show];
        let status_url = self.submit.as_ref().and_then(|submit| submit.status_url.as_ref());
        let next = self.pages.as_ref().and_then(|pages| pages.next.as_ref());
        conditions.into_iter().flatten().chain(&self.print).chain(&self.pending_when).chain(status_url).chain(next)
    }
}

/// One URL and what its loop needs of its own.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The request as given (the submit, with `--submit`).
    pub request: Request,
    /// Its URL as every output shows it, secrets redacted.
    pub shown: String,
    /// Where its shared state is kept: `--state-key`, or its origin.
    pub state_key: String,
    /// Which request the first attempt sends.
    pub phase: Phase,
    /// `-H @FILE` and `--auth-cmd`, one for the whole run.
    pub credentials: Arc<Credentials>,
    /// A `tcp://` or `unix://` target: up when a connection opens, nothing sent.
    pub endpoint: Option<Endpoint>,
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

/// `--paginate`'s settings (`--next` implies it).
#[derive(Debug)]
pub(crate) struct Pages {
    /// `--next`: the next page is what it gives on a page's body; else the `Link` header's `rel="next"`.
    pub next: Option<Filter>,
    /// `--max-pages`.
    pub max: u32,
    /// `--location-trusted`: the credentials go to a page on any origin.
    pub trusted: bool,
    /// The idempotency header's name, which the pages after the first (GETs) do not send.
    pub key_header: Option<String>,
}

/// `--rate`, `--retry-budget`, `--state`, the circuit breaker and `--fallback`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Limits {
    /// `--rate`: the spacing between two requests, or learned.
    pub rate: Option<Rate>,
    pub retry_budget: Option<RetryBudget>,
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
    pub(crate) fn from_cli(cli: Cli, stdin: &mut dyn Read) -> Result<Config, Error> {
        let environment = cli.environment.clone();
        Config::checked(cli, stdin).map_err(|e| environment.named_in(e))
    }

    fn checked(mut cli: Cli, stdin: &mut dyn Read) -> Result<Config, Error> {
        clash(&cli).map_err(|clash| clash.error)?;
        // A FIFO given as a file (`-d @<(cmd)`) is read until the run's deadline at the latest.
        let until = (!cli.timeout.is_zero()).then(|| Instant::now() + *cli.timeout);
        let user_agent = cli.user_agent.take().unwrap_or_else(|| format!("poll/{}", env!("CARGO_PKG_VERSION")));
        parse::check_header_value("User-Agent", &user_agent).map_err(|e| usage("--user-agent", e))?;
        let (mut headers, credentials) = credentials(&mut cli, until)?;
        let body = body(&mut cli, &mut headers, stdin, until)?;
        let method = method(&mut cli, body.is_some())?;
        let idempotent = is_idempotent(&method);
        let (idempotency_key, keyed) = idempotency_key(&cli, idempotent, &mut headers)?;
        let prefer_wait = prefer_wait(&cli, &mut headers)?;
        let limits = check_limits(&cli.limits, stdin, until)?;
        let given = Request { method, url: String::new(), headers, body, see_other_is_the_answer: cli.submit };
        let targets = targets(&cli, &given, &credentials)?;
        check_network(&cli, &targets)?;
        let cacert = cli.cacert.as_deref().map(|path| read_cacert(path, until)).transpose()?.unwrap_or_default();
        let (identity, key_warning) = read_identity(&cli, until)?;
        // As Node warns on every run for NODE_TLS_REJECT_UNAUTHORIZED=0: set once in a template, it is easily forgotten.
        let insecure_warning = (cli.insecure && cli.environment.sets("--insecure")).then(|| {
            "POLL_INSECURE turns off TLS certificate verification (as -k): any certificate is accepted".to_string()
        });
        let client = ClientConfig {
            user_agent,
            connect_timeout: *cli.connect_timeout,
            // A long poll is held up to --prefer-wait before it answers.
            request_timeout: cli.request_timeout.saturating_add(prefer_wait.unwrap_or_default()),
            max_redirects: cli.max_redirs,
            max_body: cli.max_body.0,
            trust: Arc::new(Trust { cacert, insecure: cli.insecure, identity }),
            certificate_everywhere: cli.location_trusted,
            unix_socket: cli.unix_socket.take(),
            watch: cli.watch.then_some(Idle((!cli.idle_timeout.is_zero()).then_some(*cli.idle_timeout))),
        };
        // A watch that only asks etcd to watch is re-sent after a break like a GET.
        let watches = |target: &Target| {
            let request = &target.request;
            Resume::of(&request.method, &request.url, request.body.as_deref()).only_watches()
        };
        let resent = idempotent || cli.watch && targets.iter().all(watches);
        let hold = if cli.watch { Duration::MAX } else { prefer_wait.unwrap_or_default() };
        let polling = polling(&cli, client, resent, keyed, hold)?;
        // `-o -` is stdout, as curl's.
        cli.output.take_if(|output| output.as_os_str() == "-");
        if let Some(output) = &cli.output {
            file::check_writable(output).map_err(|e| usage("--output", e))?;
        }
        if let Some(report) = &cli.report_junit {
            file::check_writable(report).map_err(|e| usage("--report-junit", e))?;
        }
        let command = (!cli.command.is_empty()).then(|| Command::find(&cli.command)).transpose()?;
        let start = match cli.start.take() {
            Some(command) if command.trim().is_empty() => return Err(usage("--start", "the command is empty")),
            Some(command) => Some(Start { command, grace: *cli.start_grace }),
            None => None,
        };
        let timeout = (!cli.timeout.is_zero()).then_some(*cli.timeout);
        Ok(Config {
            targets,
            polling,
            idempotency_key: idempotency_key.filter(|_| keyed),
            timeout,
            any: cli.any,
            output_file: cli.output.take(),
            junit: cli.report_junit.take(),
            style: Style {
                warnings: key_warning.into_iter().chain(insecure_warning).collect(),
                ..style(&cli, timeout)
            },
            limits,
            command,
            start,
        })
    }
}

/// `-H` headers but `-H @FILE`, and the credentials that change during a
/// run: `-H @FILE` (read now, and again whenever it changes) and `--auth-cmd`.
fn credentials(cli: &mut Cli, until: Option<Instant>) -> Result<(Headers, Arc<Credentials>), Error> {
    if let Some(user) = &cli.user {
        parse::check_header_value("Authorization", user).map_err(|e| usage("--user", e))?;
    }
    let (mut files, mut headers) = (Vec::new(), Headers::default());
    for header in std::mem::take(&mut cli.headers) {
        match header {
            HeaderArg::Field(name, value) => headers.push(name, value),
            HeaderArg::File(path) => files.push(path),
        }
    }
    if cli.auth_cmd.as_deref().is_some_and(|command| command.trim().is_empty()) {
        return Err(usage("--auth-cmd", "the command is empty"));
    }
    Ok((headers, Arc::new(Credentials::new(&files, cli.auth_cmd.clone(), until)?)))
}

/// `-d` or `--json`, with the `Content-Type` (and `Accept`) they imply unless `-H` gave one.
fn body(
    cli: &mut Cli,
    headers: &mut Headers,
    stdin: &mut dyn Read,
    until: Option<Instant>,
) -> Result<Option<Vec<u8>>, Error> {
    Ok(match (cli.data.take(), cli.json.take()) {
        (Some(data), _) => {
            let body = read_body("--data", &data, stdin, until)?;
            // As curl -d; `-H 'Content-Type: ...'` replaces it.
            headers.set_default("Content-Type", "application/x-www-form-urlencoded");
            Some(body)
        }
        (None, Some(json)) => {
            let body = read_body("--json", &json, stdin, until)?;
            check_json("--json", &body)?;
            headers.set_default("Content-Type", "application/json");
            headers.set_default("Accept", "application/json");
            Some(body)
        }
        (None, None) => None,
    })
}

/// `-X`, else HEAD for `-I`, POST with a body, GET.
fn method(cli: &mut Cli, has_body: bool) -> Result<String, Error> {
    Ok(match cli.method.take() {
        Some(method) => parse::method(&method).map_err(|e| usage("--request", e))?,
        None if cli.head => "HEAD".to_string(),
        None if has_body => "POST".to_string(),
        None => "GET".to_string(),
    })
}

/// `--idempotency-key` (`auto` made into a UUID), and whether requests carry
/// it: every attempt of a request that may have been processed (a POST or
/// PATCH, or the submit whatever its method), in `--idempotency-header`.
fn idempotency_key(cli: &Cli, idempotent: bool, headers: &mut Headers) -> Result<(Option<String>, bool), Error> {
    let key = match cli.idempotency_key.as_deref() {
        None => return Ok((None, false)),
        Some("auto") => uuid::Builder::from_random_bytes(rand::random()).into_uuid().to_string(),
        Some(key) => {
            parse::check_header_value(&cli.idempotency_header, key).map_err(|e| usage("--idempotency-key", e))?;
            key.to_string()
        }
    };
    parse::header(&format!("{}: x", cli.idempotency_header)).map_err(|e| usage("--idempotency-header", e))?;
    let keyed = cli.submit || !idempotent;
    if keyed {
        headers.set(&cli.idempotency_header, key.clone());
    }
    Ok((Some(key), keyed))
}

/// `--prefer-wait`'s header and how long a reply may be held. RFC 7240
/// counts in whole seconds: a part of one is dropped, so that the server
/// holds no longer than DUR and the request's timeout stays DUR plus
/// `--request-timeout`; below a second it asks for 1, and may be held that long.
fn prefer_wait(cli: &Cli, headers: &mut Headers) -> Result<Option<Duration>, Error> {
    let Some(wait) = cli.prefer_wait.map(|d| *d) else { return Ok(None) };
    if wait.is_zero() {
        return Err(usage("--prefer-wait", "must be longer than 0"));
    }
    let seconds = wait.as_secs().max(1);
    headers.push("Prefer", format!("wait={seconds}"));
    Ok(Some(wait.max(Duration::from_secs(seconds))))
}

/// One target per URL: the `given` request sent there, with `-u` or the
/// URL's own credentials, and where its shared state is kept.
fn targets(cli: &Cli, given: &Request, credentials: &Arc<Credentials>) -> Result<Vec<Target>, Error> {
    let mut targets = Vec::with_capacity(cli.urls.len());
    for raw in &cli.urls {
        // `poll help`, as git and cargo take it: the help is elsewhere.
        if raw == "help" {
            return Err(Error::usage("`help` is no URL; see `poll --help`"));
        }
        if let Some(endpoint) = url::endpoint(raw) {
            targets.push(port_target(raw, endpoint.map_err(Error::usage)?, credentials)?);
            continue;
        }
        let (url, in_url) = url::check(raw).map_err(Error::usage)?;
        let mut headers = given.headers.clone();
        // As curl: an `Authorization` the user wrote with -H wins over -u and the URL's.
        let written = headers.contains("authorization");
        if let (Some(user), false) = (cli.user.clone().or(in_url), written) {
            let user = if user.contains(':') { user } else { format!("{user}:") };
            let encoded = base64::engine::general_purpose::STANDARD.encode(user);
            headers.push("Authorization", format!("Basic {encoded}"));
        }
        let state_key = cli.limits.state_key.clone().unwrap_or_else(|| url::origin_key(&url));
        let phase = if cli.submit { Phase::Submit } else { Phase::Poll };
        let shown = url::redact(&url);
        let request = Request { url, headers, ..given.clone() };
        targets.push(Target { request, shown, state_key, phase, credentials: Arc::clone(credentials), endpoint: None });
    }
    Ok(targets)
}

/// A `tcp://` or `unix://` target: no request goes there, only a connection (`unix://` only
/// where there are Unix sockets, as `--unix-socket`).
fn port_target(raw: &str, endpoint: Endpoint, credentials: &Arc<Credentials>) -> Result<Target, Error> {
    if let Endpoint::Unix(path) = &endpoint {
        crate::net::unix::check(path)
            .map_err(|why| Error::usage(format!("invalid URL `{}`: {why}", url::redact(raw))))?;
    }
    let shown = url::redact(raw);
    let key = format!("{}://{}", endpoint.scheme(), endpoint.address());
    let request = Request {
        method: String::new(),
        url: raw.to_string(),
        headers: Headers::default(),
        body: None,
        see_other_is_the_answer: false,
    };
    Ok(Target {
        request,
        shown,
        state_key: key,
        phase: Phase::Poll,
        credentials: Arc::clone(credentials),
        endpoint: Some(endpoint),
    })
}

/// The way to the servers: `--unix-socket`'s path, or else the proxy
/// variables (over a Unix socket they are not read, so not checked).
fn check_network(cli: &Cli, targets: &[Target]) -> Result<(), Error> {
    if let Some(path) = &cli.unix_socket {
        return crate::net::unix::check(path).map_err(|e| usage("--unix-socket", e));
    }
    let urls: Vec<&str> =
        targets.iter().filter(|t| t.endpoint.is_none()).map(|target| target.request.url.as_str()).collect();
    crate::http::proxy::Proxies::check_env(&urls).map_err(Error::usage)
}

/// How every URL is polled: the client, the filters, `--submit` and the policy.
fn polling(cli: &Cli, client: ClientConfig, idempotent: bool, keyed: bool, hold: Duration) -> Result<Polling, Error> {
    let args = jq_args(cli)?;
    let print = cli.print.as_deref().map(|f| compile("--print", f, &args)).transpose()?;
    let pending_when = cli.pending_when.as_deref().map(|f| compile("--pending-when", f, &args)).transpose()?;
    if cli.max_pages == Some(0) {
        return Err(usage("--max-pages", "must be 1 or more: an attempt reads its first page at least"));
    }
    let pages = match cli.paginate || cli.next.is_some() {
        true => Some(Pages {
            next: cli.next.as_deref().map(|f| compile("--next", f, &args)).transpose()?,
            max: cli.max_pages.unwrap_or(pages::MAX_PAGES),
            trusted: cli.location_trusted,
            key_header: keyed.then(|| cli.idempotency_header.clone()),
        }),
        false => None,
    };
    let submit = match cli.submit {
        true => Some(Submit {
            status_url: cli.status_url.as_deref().map(|f| compile("--status-url", f, &args)).transpose()?,
            trusted: cli.location_trusted,
            key_header: keyed.then(|| cli.idempotency_header.clone()),
        }),
        false => None,
    };
    Ok(Polling {
        client,
        conditional: !cli.no_conditional,
        conditions: conditions(cli, &args)?,
        print,
        pending_when,
        stall: cli.stall.map(|stall| *stall).filter(|stall| !stall.is_zero()),
        hold,
        trace: trace(),
        policy: policy(cli, idempotent, keyed)?,
        submit,
        pages,
    })
}

/// The trace of `TRACEPARENT` and `TRACESTATE` in the environment.
fn trace() -> Result<Option<Trace>, String> {
    let var = |name| std::env::var(name).ok();
    Trace::from_environment(var("TRACEPARENT").as_deref(), var("TRACESTATE").as_deref())
}

/// The filters of `--until`, `--fail-when` and `--show`, with `--submit`'s
/// built-ins for what the user did not give.
fn conditions(cli: &Cli, args: &Args) -> Result<Conditions, Error> {
    let given =
        |flag: &'static str, source: &Option<String>| source.as_deref().map(|f| compile(flag, f, args)).transpose();
    let (until, fail_when) = (given("--until", &cli.until)?, given("--fail-when", &cli.fail_when)?);
    // With --submit, what the user did not give is built in.
    let builtin = cli.submit.then(Builtin::new);
    let builtin = builtin.transpose().map_err(|e| Error::usage(format!("the built-in conditions: {e}")))?;
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

/// The status lists, `--done-on`, `--pending-on`, `--fail-on` and `--retry-on`.
fn status_lists(cli: &Cli) -> [(&'static str, Vec<u16>); 4] {
    [
        ("--done-on", done_on_statuses(cli)),
        ("--pending-on", cli.pending_on.clone()),
        ("--fail-on", cli.fail_on.clone()),
        ("--retry-on", cli.retry_on.clone()),
    ]
}

/// The statuses of `--done-on`, without its `refused`.
fn done_on_statuses(cli: &Cli) -> Vec<u16> {
    cli.done_on
        .iter()
        .filter_map(|done| match done {
            DoneOn::Status(code) => Some(*code),
            DoneOn::Refused => None,
        })
        .collect()
}

/// The schedule and retry rules `decide()` follows.
fn policy(cli: &Cli, idempotent: bool, keyed: bool) -> Result<Policy, Error> {
    // A 304 is judged on the body kept (conditional polls): no list could ever see one.
    if let Some((flag, _)) = status_lists(cli).iter().find(|(_, codes)| codes.contains(&304)) {
        return Err(usage(flag, "304 cannot be listed: a 304 is judged on the body kept from the last 2xx"));
    }

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
        done_on: done_on_statuses(cli),
        done_refused: cli.done_on.contains(&DoneOn::Refused),
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
        from_environment: cli.environment.names(),
        ignored_environment: cli.environment.ignored.clone(),
        warnings: Vec::new(),
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

/// Two settings that cannot stand together: `flag`, and what it meets.
/// Found before anything is read, so that `environment.rs` can drop the side
/// a variable set and parse again; otherwise a usage error.
#[derive(Debug)]
pub(crate) struct Clash {
    /// The option at fault, as messages name it: `--fallback`.
    pub flag: &'static str,
    pub meets: Meets,
    pub error: Error,
}

/// What an option clashes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Meets {
    /// Another option, which cannot stand beside it.
    Flag(&'static str),
    /// The option it only means something beside, which is not there.
    Missing(&'static str),
    /// What only the command line gives (several URLs, `-H`, a URL's credentials).
    CommandLine(&'static str),
}

/// The first clash between the settings, besides those clap finds itself
/// (`conflicts_with`, `requires`): these depend on a value or on the URLs.
pub(crate) fn clash(cli: &Cli) -> Result<(), Clash> {
    let at =
        |flag: &'static str, meets: Meets, message: String| Err(Clash { flag, meets, error: usage(flag, message) });
    let limits = &cli.limits;
    if cli.urls.len() > 1 && limits.fallback.is_some() {
        let why = "stands in for one URL's body; it cannot be used with several URLs";
        return at("--fallback", Meets::CommandLine("several URLs"), why.into());
    }
    if limits.fallback.as_deref() == Some("last") && limits.state.is_none() {
        return at(
            "--fallback",
            Meets::Missing("--state"),
            "`last` needs --state, where the last good body is kept".into(),
        );
    }
    // A rate learned from 429s is the fleet's: one process alone learns nothing --retries does not already do.
    if limits.rate == Some(Rate::Auto) && limits.state.is_none() {
        let why = "`auto` needs --state, where the fleet shares the rate it learns";
        return at("--rate", Meets::Missing("--state"), why.into());
    }
    if cli.auth_cmd.is_some() {
        let written = cli
            .headers
            .iter()
            .any(|h| matches!(h, HeaderArg::Field(name, _) if name.eq_ignore_ascii_case("authorization")));
        if written {
            let why = "cannot be used with -H 'Authorization: ...'; give one of them";
            return at("--auth-cmd", Meets::CommandLine("-H 'Authorization: ...'"), why.into());
        }
        if cli.urls.iter().any(|raw| url::check(raw).is_ok_and(|(_, in_url)| in_url.is_some())) {
            let why = "cannot be used with credentials in the URL (user:password@); give one of them";
            return at("--auth-cmd", Meets::CommandLine("credentials in a URL"), why.into());
        }
    }
    if let Some(clash) = pages_clash(cli) {
        return Err(clash);
    }
    if let Some(max) = cli.interval_max.filter(|max| **max < *cli.interval) {
        return at(
            "--interval-max",
            Meets::Flag("--interval"),
            format!("{max} is shorter than --interval {}", cli.interval),
        );
    }
    if *cli.backoff_max < *cli.backoff {
        let why = format!("{} is shorter than --backoff {}", cli.backoff_max, cli.backoff);
        return at("--backoff-max", Meets::Flag("--backoff"), why);
    }
    if cli.start.is_some() && cli.command.is_empty() {
        let why = "give the command to run once the targets are up after --: there would be nothing to run before \
                   the started command is stopped (poll --start CMD URL -- CMD)";
        return at("--start", Meets::Missing("-- CMD"), why.into());
    }
    // Nothing is sent to a tcp:// or unix:// target: what needs a request or a reply needs an http(s):// one.
    let some_http = cli.urls.iter().any(|raw| url::endpoint(raw).is_none());
    if let (false, Some(flag)) = (some_http, needs_http(cli)) {
        let why = "needs an http(s):// target: tcp:// and unix:// targets are only connected to, nothing is sent \
                   and no body comes back";
        return at(flag, Meets::CommandLine("no http(s):// target"), why.into());
    }
    // A status may be in one list only, or the run could not say what it means.
    let lists = status_lists(cli);
    for (i, (flag, codes)) in lists.iter().enumerate() {
        for (other, other_codes) in &lists[i + 1..] {
            if let Some(code) = codes.iter().find(|code| other_codes.contains(code)) {
                return at(flag, Meets::Flag(other), format!("{code} is in {other} too; give each status one meaning"));
            }
        }
    }
    Ok(())
}

/// The first flag given that needs a request or a reply (`--until`, `-d`, `--watch`, a status
/// in `--done-on`, ...), as the contract lists them.
fn needs_http(cli: &Cli) -> Option<&'static str> {
    let statuses = cli.done_on.iter().any(|done| matches!(done, DoneOn::Status(_)));
    let given = [
        ("--until", cli.until.is_some()),
        ("--fail-when", cli.fail_when.is_some()),
        ("--show", cli.show.is_some()),
        ("--print", cli.print.is_some()),
        ("--stall", cli.stall.is_some()),
        ("--output", cli.output.is_some()),
        ("--data", cli.data.is_some()),
        ("--json", cli.json.is_some()),
        ("--request", cli.method.is_some()),
        ("--header", !cli.headers.is_empty()),
        ("--user", cli.user.is_some()),
        ("--head", cli.head),
        ("--watch", cli.watch),
        ("--submit", cli.submit),
        ("--pending-on", !cli.pending_on.is_empty()),
        ("--fail-on", !cli.fail_on.is_empty()),
        ("--retry-on", !cli.retry_on.is_empty()),
        ("--pending-when", cli.pending_when.is_some()),
        ("--done-on", statuses),
        ("--paginate", cli.paginate),
        ("--next", cli.next.is_some()),
        // Beyond the contract's list, what only a request carries: given for a port, a mistake.
        ("--auth-cmd", cli.auth_cmd.is_some()),
        ("--user-agent", cli.user_agent.is_some()),
        ("--idempotency-key", cli.idempotency_key.is_some()),
        ("--prefer-wait", cli.prefer_wait.is_some()),
    ];
    given.into_iter().find_map(|(flag, given)| given.then_some(flag))
}

/// What `--paginate`, `--next`, `--max-pages` and `--location-trusted` clash
/// with, besides what clap refuses (`--watch`, `--submit`, `-I`).
fn pages_clash(cli: &Cli) -> Option<Clash> {
    let at = |flag: &'static str, meets: Meets, message: &str| Clash { flag, meets, error: usage(flag, message) };
    let walks = cli.paginate || cli.next.is_some();
    let flag = if cli.next.is_some() && !cli.paginate { "--next" } else { "--paginate" };
    if cli.max_pages.is_some() && !walks {
        return Some(at("--max-pages", Meets::Missing("--paginate"), "only means something with --paginate or --next"));
    }
    if cli.location_trusted && !walks && !cli.submit {
        let why = "only means something with --submit or --paginate (where credentials go to another origin)";
        return Some(at("--location-trusted", Meets::Missing("--submit"), why));
    }
    // A port or a socket (issue 50's tcp:// and unix:// targets) has no pages. Told apart here by the
    // scheme as written, before the URL's own check, so that the words are these with or without them.
    let no_pages = |raw: &String| {
        let scheme = raw.split_once("://").map(|(scheme, _)| scheme.to_ascii_lowercase()).unwrap_or_default();
        matches!(scheme.as_str(), "tcp" | "unix")
    };
    if let (true, Some(raw)) = (walks, cli.urls.iter().find(|raw| no_pages(raw))) {
        let why = format!("a tcp:// or unix:// target has no pages to read: `{}`", shorten(&url::redact(raw)));
        return Some(Clash { flag, meets: Meets::CommandLine("a tcp:// or unix:// target"), error: usage(flag, why) });
    }
    None
}

fn usage(flag: &str, message: impl std::fmt::Display) -> Error {
    Error::usage(format!("{flag}: {message}"))
}

/// Methods that may be re-sent safely. Unknown methods are treated like POST.
fn is_idempotent(method: &str) -> bool {
    matches!(method.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "PUT" | "DELETE" | "OPTIONS" | "TRACE")
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

/// `--cacert`'s certificates, at least one.
fn read_cacert(path: &Path, until: Option<Instant>) -> Result<Vec<CertificateDer<'static>>, Error> {
    let shown = path.display();
    let pem = file::read_bounded(path, until).map_err(|e| usage("--cacert", format!("cannot read `{shown}`: {e}")))?;
    let (certificates, _) = roots::certificates(&pem);
    if certificates.is_empty() {
        return Err(usage("--cacert", format!("`{shown}` holds no PEM certificate")));
    }
    Ok(certificates)
}

/// `--cert` and `--key`: the client certificate with the chain that may
/// follow it, and its private key (from `--key`'s file, else from `--cert`'s),
/// checked to belong together before anything is sent; and the warning for a
/// key file that others may read. No message quotes the files: they name them.
/// `--cert FILE:PASSPHRASE` (curl's form) decrypts an encrypted key; no
/// message, `-v` line or annotation ever holds the passphrase: only `FILE`.
fn read_identity(cli: &Cli, until: Option<Instant>) -> Result<(Option<Identity>, Option<String>), Error> {
    let Some(given) = cli.cert.as_deref() else { return Ok((None, None)) };
    let (cert_path, passphrase) = match given.to_str() {
        Some(text) => {
            let (file, passphrase) = parse::cert(text);
            (PathBuf::from(file), passphrase)
        }
        None => (given.to_path_buf(), None),
    };
    let cert_path = cert_path.as_path();
    let shown = cert_path.display().to_string();
    let read = |flag: &str, path: &Path| {
        file::read_bounded(path, until).map_err(|e| usage(flag, format!("cannot read `{}`: {e}", path.display())))
    };
    let pem = read("--cert", cert_path)?;
    let (chain, broken) = roots::certificates(&pem);
    if broken > 0 {
        return Err(usage("--cert", format!("`{shown}` holds a certificate whose PEM does not decode")));
    }
    if chain.is_empty() {
        return Err(usage("--cert", format!("`{shown}` holds no PEM certificate")));
    }
    let (flag, key_path, key_pem) = match cli.key.as_deref() {
        Some(path) => ("--key", path, read("--key", path)?),
        None => ("--cert", cert_path, pem),
    };
    let key = private_key(flag, key_path, &key_pem, passphrase.as_deref())?;
    let key_shown = key_path.display();
    let identity = Identity::new(shown.clone(), chain, key).map_err(|e| match e {
        rustls::Error::InconsistentKeys(_) if flag == "--key" => {
            usage("--key", format!("the key in `{key_shown}` does not belong to the certificate in `{shown}`"))
        }
        rustls::Error::InconsistentKeys(_) => {
            usage("--cert", format!("the key in `{shown}` does not belong to its certificate"))
        }
        // rustls' reasons are Rust's debug words (`Other(OtherError(...))`): said in ours.
        rustls::Error::InvalidCertificate(_) => usage(
            "--cert",
            format!("the certificate in `{shown}` is no X.509 certificate poll can read (version 1 or 3, DER in PEM)"),
        ),
        // rustls' words name no byte of the key, but say nothing the file's name does not.
        _ => usage(
            flag,
            format!("the key in `{key_shown}` is no RSA, ECDSA (P-256, P-384) or Ed25519 key rustls can use"),
        ),
    })?;
    let warning = file::others_may_read(key_path).map(|mode| {
        format!("{flag} `{key_shown}` holds a private key that others may read (mode {mode:o}): chmod 600 {key_shown}")
    });
    Ok((Some(identity), warning))
}

/// The first private key of `pem` (`flag`'s file `path`): PKCS#8, PKCS#1 or
/// SEC1, through rustls-pki-types' PEM reader, whose own errors are never
/// shown (one may quote a line of the file); an encrypted PKCS#8 one
/// decrypted with `passphrase` (`--cert FILE:PASSPHRASE`).
fn private_key(flag: &str, path: &Path, pem: &[u8], passphrase: Option<&str>) -> Result<PrivateKeyDer<'static>, Error> {
    let shown = path.display();
    if let Some(decrypted) = passphrase.and_then(|passphrase| tls::decrypt_key(pem, passphrase.as_bytes())) {
        return decrypted.map_err(|why| {
            let why = match why {
                Undecrypted::Garbled => format!("`{shown}` holds an encrypted private key whose PEM does not decode"),
                Undecrypted::WrongPassphrase => {
                    format!("the passphrase given with --cert does not decrypt the key in `{shown}`")
                }
                Undecrypted::Unsupported => format!(
                    "`{shown}` holds a key encrypted in a way poll does not decrypt (it takes PBES2: PBKDF2 or scrypt, \
                     with AES-CBC); encrypt it again: openssl pkcs8 -topk8 -v2 aes-256-cbc -in {shown} -out NEW.key"
                ),
            };
            usage(flag, why)
        });
    }
    // The reader skips an encrypted key's section as one of no key: it is told apart first.
    let holds = |text: &[u8]| pem.windows(text.len()).any(|window| window == text);
    if holds(b"-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return Err(usage(
            flag,
            format!(
                "`{shown}` holds an encrypted private key; give its passphrase as --cert FILE:PASSPHRASE (curl's \
                 form), or decrypt it first: openssl pkey -in {shown} -out PLAIN.key"
            ),
        ));
    }
    if holds(b"Proc-Type: 4,ENCRYPTED") {
        return Err(usage(
            flag,
            format!(
                "`{shown}` holds an encrypted private key in OpenSSL's old PEM form, which poll does not decrypt; \
                 make it PKCS#8: openssl pkcs8 -topk8 -v2 aes-256-cbc -in {shown} -out NEW.key"
            ),
        ));
    }
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(key) => Ok(key),
        Err(rustls::pki_types::pem::Error::NoItemsFound) if flag == "--cert" => {
            Err(usage(flag, format!("`{shown}` holds no private key; give it with --key FILE")))
        }
        Err(rustls::pki_types::pem::Error::NoItemsFound) => {
            Err(usage(flag, format!("`{shown}` holds no PEM private key (PKCS#8, PKCS#1 or SEC1)")))
        }
        Err(_) => Err(usage(flag, format!("`{shown}` holds a PEM section that does not decode"))),
    }
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
        Some("last") => Some(Fallback::Last),
        Some(value) => {
            let body = read_body("--fallback", value, stdin, until)?;
            check_json("--fallback", &body)?;
            Some(Fallback::Body(body))
        }
    };
    Ok(Limits {
        rate: cli.rate,
        retry_budget: cli.retry_budget,
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

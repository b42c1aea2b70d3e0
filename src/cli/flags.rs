//! The command line: clap's derive model of every flag, with value parsers
//! that reject bad input before anything is sent, and the `POLL_<FLAG>`
//! variable of each option. `environment.rs` decides which variables a parse
//! reads; `config.rs` turns a [`Cli`] into a `Config`. Outside `cli/` only
//! `lib.rs` names clap, to print `--help` and `--version`.

use std::ffi::OsString;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgAction, Args, CommandFactory as _, FromArgMatches as _, Parser, ValueEnum};

use crate::error::{self, EXIT_CODES, Error};
use crate::rules::bucket::Rate;
use crate::rules::budget::RetryBudget;
use crate::rules::condition::{BUILTIN_VERDICT, OPERATION_WORD, RESOURCE_WORD};
use crate::util::text::printable;
use crate::{http::request, rules::breaker, rules::policy, util::parse};

const REQUEST: &str = "Request";
const CONDITION: &str = "Condition";
const SUBMIT: &str = "Submit and wait";
const SCHEDULE: &str = "Schedule and retries";
const OUTPUT: &str = "Output";
const LIMITS: &str = "Rate limits and shared state";

/// `--start-grace`: how long a started command's group has between SIGTERM and SIGKILL.
pub(crate) const START_GRACE: Duration = Duration::from_secs(5);

/// What `-h` says after the options.
const AFTER_HELP: &str = "Use --help for examples, the built-in conditions of --submit, the exit codes and each option's \
    variable.";

/// Examples: what each does, then the command lines; in `--help` and the man page.
pub(crate) const EXAMPLES: [(&str, &str); 9] = [
    (
        "Wait for a job, stop early if it fails, give up after ten minutes:",
        r#"poll --until '.status=="done"' --fail-when '.status=="failed"' --timeout 10m "$JOB_URL""#,
    ),
    (
        "Wait until a freshly deployed service answers its health check:",
        "poll --timeout 2m --interval 2s https://staging.example.com/healthz",
    ),
    (
        "Wait until a package version is published (404 until then):",
        "poll --pending-on 404 --timeout 10m https://registry.npmjs.org/left-pad/1.4.0",
    ),
    (
        "Wait until every check run of a commit has completed, on every page of the list, and fail if one failed:",
        "poll --paginate -H \"Authorization: Bearer $GITHUB_TOKEN\" \\\n  --until 'map(.check_runs[]) | all(.status == \"completed\")' \\\n  --fail-when 'map(.check_runs[]) | any(.conclusion == \"failure\")' \\\n  \"$GITHUB_API_URL/repos/$GITHUB_REPOSITORY/commits/$GITHUB_SHA/check-runs?per_page=100\"",
    ),
    (
        "Start the app in poll's place once its database answers (a container's entry point):",
        "poll --timeout 2m http://db:8080/healthz -- /app/start --port 80",
    ),
    (
        "Wait for three services at once, each healthy on three polls in a row:",
        "poll --stable 3 --timeout 2m \\\n  http://localhost:8080/healthz http://localhost:8081/healthz http://localhost:8082/healthz",
    ),
    (
        "Start an export, wait for it, and keep its id; safe to retry with the same key:",
        "ID=$(poll --submit --json '{\"table\":\"users\"}' --idempotency-key \"$GITHUB_RUN_ID-export\" \\\n  --print .result.id https://api.example.com/exports)",
    ),
    (
        "Branch on the outcome in a script:",
        "poll -q --until '.ok' \"$URL\" > result.json\ncase $? in\n  0) echo ready ;;\n  1) echo \"timed out\" ;;\n  4) echo \"job failed\" ;;\n  *) echo \"poll failed\" ;;\nesac",
    ),
    (
        "Let every CI machine share one rate budget and breaker, with the last good answer as a fallback:",
        "poll --state redis://ci-redis.internal:6379/0 --state-key \"$API_TOKEN_NAME\" \\\n  --rate 10/s --fallback last https://api.example.com/status",
    ),
];

/// The built-in conditions of `--submit`, as `--help` and the man page say
/// them: what comes first, the jq that reads a JSON body, and what its answer means.
pub(crate) const BUILTIN_INTRO: &str = "With --submit, replies are done and failed by the built-ins; --until \
    replaces the done test and --fail-when the failure test. A status reply 202 is never done; a 2xx that is not \
    JSON is done. A JSON body is read by this jq, whose `word` is read one way on an operation's status and \
    another on a resource:";
pub(crate) const BUILTIN_FILTERS: [(&str, &str); 3] = [
    ("word, on an operation's status (Operation-Location, Azure-AsyncOperation, --status-url)", OPERATION_WORD),
    ("word, on a resource (Location, body polling, the submit's own reply)", RESOURCE_WORD),
    ("the answer", BUILTIN_VERDICT),
];
pub(crate) const BUILTIN_OUTCOME: &str = "\"done\" is done, \"failed\" fails (exit 4), \"running\" polls on; \
    \"other\" is done on a resource in Location mode and body polling, and polls on elsewhere.";

/// The help text after the flags: examples, the built-in conditions of
/// `--submit`, and the exit codes, from the one table in `error.rs`.
pub(crate) fn after_long_help() -> String {
    let codes: String = EXIT_CODES.iter().map(|(code, meaning)| format!("\n  {code:<3}  {meaning}")).collect();
    let examples: Vec<String> = EXAMPLES
        .iter()
        .map(|(what, lines)| {
            format!("  {what}\n{}", lines.lines().map(|l| format!("    {l}")).collect::<Vec<_>>().join("\n"))
        })
        .collect();
    let examples = format!("Examples:\n{}", examples.join("\n\n"));
    let filters: String = BUILTIN_FILTERS
        .iter()
        .map(|(name, filter)| format!("    # {name}\n    {}\n", filter.replace('\n', "\n    ")))
        .collect();
    format!(
        "{examples}\n\n\
         Built-in conditions of --submit:\n  {BUILTIN_INTRO}\n{filters}  {BUILTIN_OUTCOME}\n\n\
         Exit codes:{codes}"
    )
}

/// `--fallback`'s help, with the exit codes it stands in on from the table in `error.rs`.
fn fallback_help() -> String {
    format!(
        "Body printed when the run ends with exit {}: JSON, @FILE, or last (the last good body in --state)",
        error::fallback_codes()
    )
}

/// Poll an HTTP endpoint until a jq condition holds on its JSON body.
#[derive(Debug, Parser)]
#[command(
    name = "poll",
    version,
    about = "Poll an HTTP endpoint until a jq condition holds on its JSON body",
    long_about = "Poll an HTTP endpoint until a jq condition holds on its JSON body.\n\n\
        poll sends one request, built from curl-like flags, and repeats it until --until holds on the \
        JSON body of a 2xx response. Transient failures (connection errors, timeouts, 408, 429, 5xx) are \
        retried with exponential backoff and jitter; the server's Retry-After and rate-limit headers win \
        over the backoff. Several URLs are polled at once, with one deadline. The final body goes to \
        stdout; the exit code tells what happened.",
    // clap would say `[-- <CMD>...]`, as if every word after `--` were a command; the man page's synopsis says this too.
    override_usage = "poll [OPTIONS] <URL>... [-- CMD [ARGS]...]",
    after_help = AFTER_HELP,
    after_long_help = after_long_help(),
    max_term_width = 100
)]
pub struct Cli {
    /// The targets, all at once: http(s):// URLs, tcp://HOST:PORT ports and unix:///PATH sockets
    #[arg(value_name = "URL", required = true, num_args = 1..)]
    pub(crate) urls: Vec<String>,

    /// The variables (`POLL_TIMEOUT`) that set an option, and those ignored, for `-v` and messages.
    #[arg(skip)]
    pub(crate) environment: Environment,

    /// HTTP method [default: GET, or POST when a body is given]
    #[arg(short = 'X', long = "request", value_name = "METHOD", help_heading = REQUEST)]
    pub(crate) method: Option<String>,

    /// Extra header 'Name: value'; repeatable. @FILE reads headers from FILE, one a line, and reads it again
    /// before an attempt whenever it changed
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header, help_heading = REQUEST)]
    pub(crate) headers: Vec<HeaderArg>,

    /// Request body; @FILE reads a file, @- reads stdin
    #[arg(short = 'd', long, value_name = "DATA", conflicts_with = "json", help_heading = REQUEST)]
    pub(crate) data: Option<String>,

    /// JSON request body (validated), with Content-Type and Accept set to application/json; @FILE and @- too
    #[arg(long, value_name = "JSON", help_heading = REQUEST)]
    pub(crate) json: Option<String>,

    /// Basic authentication, USER[:PASSWORD]
    #[arg(short = 'u', long, value_name = "USER[:PASS]", help_heading = REQUEST)]
    pub(crate) user: Option<String>,

    /// Run CMD (sh -c) for a bearer token: its stdout, or a Kubernetes ExecCredential (run again before it
    /// expires); a 401 runs it again and re-sends the attempt at once
    #[arg(long, value_name = "CMD", conflicts_with = "user", help_heading = REQUEST)]
    pub(crate) auth_cmd: Option<String>,

    /// User-Agent header [default: poll/<version>]
    #[arg(short = 'A', long, value_name = "UA", help_heading = REQUEST)]
    pub(crate) user_agent: Option<String>,

    /// Connect timeout of one attempt
    #[arg(long, value_name = "DURATION", default_value_t = shown(request::CONNECT_TIMEOUT), value_parser = parse_duration, help_heading = REQUEST)]
    pub(crate) connect_timeout: humantime::Duration,

    /// Timeout of one whole attempt, from connect to the last body byte
    #[arg(long, value_name = "DURATION", default_value_t = shown(request::REQUEST_TIMEOUT), value_parser = parse_duration, help_heading = REQUEST)]
    pub(crate) request_timeout: humantime::Duration,

    /// Redirects followed; 0 follows none
    #[arg(long, value_name = "N", default_value_t = request::MAX_REDIRECTS, help_heading = REQUEST)]
    pub(crate) max_redirs: u32,

    /// Largest body read, after decompression (e.g. 512KiB, 16MiB); larger is a permanent error
    #[arg(long, value_name = "SIZE", default_value_t = Size(request::MAX_BODY), value_parser = parse_size, help_heading = REQUEST)]
    pub(crate) max_body: Size,

    /// Accept any TLS certificate
    #[arg(short = 'k', long, help_heading = REQUEST)]
    pub(crate) insecure: bool,

    /// Extra CA certificates (PEM) to trust, besides the built-in roots (for --state rediss:// too)
    #[arg(long, value_name = "FILE", help_heading = REQUEST)]
    pub(crate) cacert: Option<std::path::PathBuf>,

    /// Client certificate (PEM) for servers that ask for one (mutual TLS); FILE:PASSPHRASE decrypts its key
    ///
    /// Its chain may follow it in FILE, and its key too. It is shown over https:// to the URL's origin (to every
    /// origin with --location-trusted) and to --state rediss://. FILE:PASSPHRASE is curl's form (`\:` for a colon
    /// in FILE) and decrypts an encrypted PKCS#8 key.
    #[arg(short = 'E', long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = REQUEST)]
    pub(crate) cert: Option<std::path::PathBuf>,

    /// The private key of --cert, when not in --cert's file
    ///
    /// PEM: PKCS#8, PKCS#1 or SEC1; an encrypted PKCS#8 key with --cert FILE:PASSPHRASE.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, requires = "cert", help_heading = REQUEST)]
    pub(crate) key: Option<std::path::PathBuf>,

    /// Connect to this Unix domain socket instead of the URL's host (e.g. /var/run/docker.sock); the URL still
    /// gives the path, Host and scheme; no proxy is used
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::FilePath, help_heading = REQUEST)]
    pub(crate) unix_socket: Option<std::path::PathBuf>,

    /// Send HEAD (curl's -I): a cheap existence check; the body is empty
    #[arg(short = 'I', long, conflicts_with_all = ["data", "json", "method"], help_heading = REQUEST)]
    pub(crate) head: bool,

    /// Sent as Idempotency-Key on every attempt of a POST/PATCH (with --submit: of the submit), which makes it safe
    /// to retry; auto makes a random UUID v4 once per run
    #[arg(long, value_name = "KEY|auto", help_heading = REQUEST)]
    pub(crate) idempotency_key: Option<String>,

    /// The name of the idempotency header, for APIs that use another
    #[arg(long, value_name = "NAME", default_value = "Idempotency-Key", requires = "idempotency_key", help_heading = REQUEST)]
    pub(crate) idempotency_header: String,

    /// Send no If-None-Match / If-Modified-Since from the last 2xx's ETag / Last-Modified [default: conditional
    /// polls, a 304 judged on the body kept]
    #[arg(long, help_heading = REQUEST)]
    pub(crate) no_conditional: bool,

    /// Send Prefer: wait=SECONDS (RFC 7240) on every request: a server that supports it holds the request until
    /// the state changes or DURATION passes; each attempt's timeout is DURATION plus --request-timeout
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = REQUEST)]
    pub(crate) prefer_wait: Option<humantime::Duration>,

    /// Done when this jq filter's first output is truthy on a 2xx JSON body
    #[arg(long, value_name = "JQ", help_heading = CONDITION)]
    pub(crate) until: Option<String>,

    /// Stop with exit 4 when this jq filter is truthy on a 2xx JSON body (checked before --until)
    #[arg(long, value_name = "JQ", help_heading = CONDITION)]
    pub(crate) fail_when: Option<String>,

    /// These statuses end the run with exit 0, e.g. 404,410 to wait until it is deleted, or refused (gone); a
    /// 2xx is then "not yet" unless --until holds on it
    ///
    /// refused: nothing listens there any more (a connection refused, a Unix socket file gone), before a first
    /// contact too; an open port or any reply is then "not yet".
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_done_on, help_heading = CONDITION)]
    pub(crate) done_on: Vec<DoneOn>,

    /// These statuses mean "not yet": polled again at --interval, spending no --retries, e.g. 404 to wait until it
    /// exists
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_status, help_heading = CONDITION)]
    pub(crate) pending_on: Vec<u16>,

    /// On a reply of a status no list names and that is not a 2xx: when this jq filter is truthy it is "not yet"
    /// (polled at --interval, no --retries spent), e.g. '.error.code == "ResourceNotFound"'; otherwise retried or
    /// failed as before. A body that is not JSON reads as null
    #[arg(long, value_name = "JQ", help_heading = CONDITION)]
    pub(crate) pending_when: Option<String>,

    /// These statuses end the run with exit 4, as --fail-when does, e.g. 410
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_status, help_heading = CONDITION)]
    pub(crate) fail_on: Vec<u16>,

    /// Bind $NAME to the string VALUE in every filter, as jq --arg does; repeatable
    // Values are taken as they come, as jq takes them: `--arg x -foo`, `--argjson n -1`.
    #[arg(long = "arg", value_names = ["NAME", "VALUE"], num_args = 2, allow_hyphen_values = true, action = ArgAction::Append, help_heading = CONDITION)]
    pub(crate) args: Vec<String>,

    /// Bind $NAME to the JSON value in every filter, as jq --argjson does; repeatable
    #[arg(long = "argjson", value_names = ["NAME", "JSON"], num_args = 2, allow_hyphen_values = true, action = ArgAction::Append, help_heading = CONDITION)]
    pub(crate) argjson: Vec<String>,

    /// Done only when the condition holds on N polls in a row (without --until: N 2xx in a row), --interval apart
    #[arg(long, value_name = "N", default_value_t = policy::STABLE, value_parser = clap::value_parser!(u32).range(1..), help_heading = CONDITION)]
    pub(crate) stable: u32,

    /// Done as soon as one URL is done; the others are abandoned [default: all must be done]
    #[arg(long, help_heading = CONDITION)]
    pub(crate) any: bool,

    /// Read every page a Link: rel="next" names; the filters get an array
    ///
    /// Each attempt reads the first page, then each page its `Link: <URL>; rel="next"` names; the filters, --print
    /// and stdout get the array of the pages' bodies (as gh api --paginate --slurp)
    #[arg(long, conflicts_with_all = ["watch", "submit", "head"], help_heading = CONDITION)]
    pub(crate) paginate: bool,

    /// The next page's URL, by this filter on a page (e.g. .nextLink)
    ///
    /// A URL, or a reference resolved against the page's URL; null, empty or "" ends the walk. Implies --paginate,
    /// and wins over Link
    #[arg(long, value_name = "JQ", conflicts_with_all = ["watch", "submit", "head"], help_heading = CONDITION)]
    pub(crate) next: Option<String>,

    /// The most pages one attempt reads; more is exit 3 [default: 100]
    #[arg(long, value_name = "N", help_heading = CONDITION)]
    pub(crate) max_pages: Option<u32>,

    /// The request starts an operation: send it once (a PUT or DELETE is re-sent on transient
    /// failures), then poll the status URL its reply names with GET, or a PUT's or PATCH's own URL
    /// when it names none (ARM's body polling); a reply that is already done or failed ends the run
    #[arg(long, help_heading = SUBMIT)]
    pub(crate) submit: bool,

    /// Where the operation is when the submit reply has no header for it: a jq filter on its JSON body giving a
    /// URL or path, e.g. '"/jobs/\(.id)"'
    #[arg(long, value_name = "JQ", requires = "submit", help_heading = SUBMIT)]
    pub(crate) status_url: Option<String>,

    /// Also send Authorization, Cookie and -u to another origin
    ///
    /// A --submit status URL or a --paginate page on another origin gets them too, and the --cert certificate
    #[arg(long, help_heading = SUBMIT)]
    pub(crate) location_trusted: bool,

    /// Keep each reply open and judge what it streams, event by event (SSE, JSON streams, long polls, blocking
    /// queries); when a reply ends, ask again, resuming
    ///
    /// Events are judged as they arrive: Server-Sent Events, NDJSON and other JSON streams, long polls, blocking
    /// queries. A reply that ends is asked again, resuming (Last-Event-ID, X-Consul-Index, the reply's
    /// validators). No --request-timeout: a reply may be held to the deadline.
    #[arg(long, conflicts_with_all = ["submit", "head", "prefer_wait", "interval_max"], help_heading = SCHEDULE)]
    pub(crate) watch: bool,

    /// Under --watch, a reply that sends no byte (an event, a heartbeat, a comment) for DURATION is dropped and
    /// asked again, resuming; 0 means no bound
    #[arg(long, value_name = "DURATION", default_value_t = shown(request::IDLE_TIMEOUT), value_parser = parse_duration, requires = "watch", help_heading = SCHEDULE)]
    pub(crate) idle_timeout: humantime::Duration,

    /// Wait between polls while the condition is not met yet
    #[arg(short = 'i', long, value_name = "DURATION", default_value_t = shown(policy::INTERVAL), value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) interval: humantime::Duration,

    /// Let the wait between "not yet" polls grow by 1.5x each time, from --interval up to DURATION; server advice
    /// still wins [default: a fixed --interval]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) interval_max: Option<humantime::Duration>,

    /// Stop (exit 1, "stalled") when what the progress line shows (the --show value, else the body) has not
    /// changed for DURATION while the condition is not met; failures neither reset nor advance it
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) stall: Option<humantime::Duration>,

    /// Overall deadline for the whole run; 0 means none
    #[arg(long, value_name = "DURATION", default_value_t = shown(policy::TIMEOUT), value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) timeout: humantime::Duration,

    /// Consecutive transient failures tolerated; resets on every healthy 2xx
    #[arg(long, value_name = "N", default_value_t = policy::RETRIES, help_heading = SCHEDULE)]
    pub(crate) retries: u32,

    /// First retry delay; doubles on each consecutive failure
    #[arg(long, value_name = "DURATION", default_value_t = shown(policy::BACKOFF), value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) backoff: humantime::Duration,

    /// Retry delay cap
    #[arg(long, value_name = "DURATION", default_value_t = shown(policy::BACKOFF_MAX), value_parser = parse_duration, help_heading = SCHEDULE)]
    pub(crate) backoff_max: humantime::Duration,

    /// Randomise retry delays: equal = [d/2, d], full = [0, d], none = d
    #[arg(long, value_name = "MODE", value_enum, default_value_t = JitterArg::Equal, help_heading = SCHEDULE)]
    pub(crate) jitter: JitterArg,

    /// Also retry these statuses, e.g. 404,409
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_status, help_heading = SCHEDULE)]
    pub(crate) retry_on: Vec<u16>,

    /// Retry POST and PATCH like GET, even when the request may have been processed
    #[arg(long, help_heading = SCHEDULE)]
    pub(crate) retry_non_idempotent: bool,

    /// Write the final body to FILE (atomically) instead of stdout
    #[arg(short = 'o', long, value_name = "FILE", help_heading = OUTPUT)]
    pub(crate) output: Option<std::path::PathBuf>,

    /// Also write the run as a JUnit XML report to FILE (atomically): a testcase per URL, a failure for each that
    /// did not end done, as GitLab and other CIs show test results
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath, help_heading = OUTPUT)]
    pub(crate) report_junit: Option<std::path::PathBuf>,

    /// Print this jq filter's outputs on the final body instead of the body: strings raw, others as JSON
    #[arg(long, value_name = "JQ", help_heading = OUTPUT)]
    pub(crate) print: Option<String>,

    /// One line per attempt on stderr; -vv adds response headers
    #[arg(short = 'v', long, action = ArgAction::Count, conflicts_with = "quiet", help_heading = OUTPUT)]
    pub(crate) verbose: u8,

    /// Print only the final error line
    #[arg(short = 'q', long, help_heading = OUTPUT)]
    pub(crate) quiet: bool,

    /// stderr format: text, or json for one NDJSON object per attempt plus a final one
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormatArg::Text, help_heading = OUTPUT)]
    pub(crate) log_format: LogFormatArg,

    /// A jq filter whose output on each JSON body is shown in the progress line, e.g. .progress
    #[arg(long, value_name = "JQ", help_heading = OUTPUT)]
    pub(crate) show: Option<String>,

    /// Colour on stderr: auto (only on a terminal, unless NO_COLOR is set), always or never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorArg::Auto, help_heading = OUTPUT)]
    pub(crate) color: ColorArg,

    /// CI integration: github (annotations, -v groups, the step summary table), gitlab (-v in collapsed
    /// sections), or none [default: github when GITHUB_ACTIONS=true, gitlab when GITLAB_CI=true]
    #[arg(long, value_name = "CI", value_enum, help_heading = OUTPUT)]
    pub(crate) ci: Option<CiArg>,

    /// Start CMD (sh -c) in a group of its own, wait for the targets, run -- CMD, then stop the group
    ///
    /// Start CMD (sh -c; Windows cmd /C) in a process group (Windows: a job object) of its own once no target
    /// answers yet (one that does is exit 3), wait for the targets, run -- CMD as a child (signals passed on; its
    /// status is the run's), then stop CMD's whole group: SIGTERM, then SIGKILL after --start-grace. A started
    /// command that exits first, with any status, ends the run (exit 3). CMD's output goes to stderr.
    #[arg(long, value_name = "CMD", help_heading = SCHEDULE)]
    pub(crate) start: Option<String>,

    /// SIGTERM to SIGKILL, when --start's group is stopped
    #[arg(long, value_name = "DURATION", default_value_t = shown(START_GRACE), value_parser = parse_duration, requires = "start", help_heading = SCHEDULE)]
    pub(crate) start_grace: humantime::Duration,

    #[command(flatten)]
    pub(crate) limits: LimitArgs,

    /// After exit 0, run CMD with its ARGS in poll's place (exec, no shell; a child under --start): its exit
    /// status is the run's, and the body is not printed
    #[arg(last = true, value_name = "CMD", value_parser = clap::value_parser!(OsString))]
    pub(crate) command: Vec<OsString>,
}

/// The flags under "Rate limits and shared state".
#[derive(Debug, Args)]
pub(crate) struct LimitArgs {
    /// At most N requests per DURATION, evenly spaced, e.g. 10/s, 100/m, 5/10s; shared through --state; auto (with
    /// --state): learned from the server's 429s by the whole fleet
    #[arg(long, value_name = "N/DURATION|auto", value_parser = parse_rate, help_heading = LIMITS)]
    pub(crate) rate: Option<Rate>,

    /// With --state: the fleet's retries over the last 10s are at most PCT of its other requests plus N a second
    /// (20% means 20%/1); a retry with no room waits for the next regular poll
    #[arg(long, value_name = "PCT%[/N]", value_parser = parse_retry_budget, requires = "state", help_heading = LIMITS)]
    pub(crate) retry_budget: Option<RetryBudget>,

    /// State shared by every poll naming it: rate budget, server advice, circuit breaker, last good body; a FILE,
    /// or redis://[USER:PASS@]HOST[:PORT][/DB] (any node of a cluster too), rediss://..., redis+unix:///PATH,
    /// redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]
    #[arg(long, value_name = "FILE|URL", help_heading = LIMITS)]
    pub(crate) state: Option<String>,

    /// The key of the shared state instead of the origin, e.g. one per API token [default: the origin]
    #[arg(long, value_name = "KEY", requires = "state", help_heading = LIMITS)]
    pub(crate) state_key: Option<String>,

    /// When the state store cannot be reached within 1s: open warns and goes on with this process's own limits,
    /// closed exits 6
    #[arg(long, value_name = "MODE", value_enum, default_value_t = StateFailArg::Open, requires = "state", help_heading = LIMITS)]
    pub(crate) state_fail: StateFailArg,

    /// Outcomes the circuit breaker remembers per origin (5 to 1000)
    #[arg(long, value_name = "N", default_value_t = breaker::WINDOW, requires = "state", help_heading = LIMITS)]
    pub(crate) breaker_window: u32,

    /// Open the breaker when the success rate over the window (at least 5 outcomes) falls below this
    #[arg(long, value_name = "PCT", default_value = "60%", value_parser = parse_percent, requires = "state", help_heading = LIMITS)]
    pub(crate) breaker_min_success: u8,

    /// Open the breaker when the window's p95 latency exceeds this
    #[arg(long, value_name = "DURATION", default_value_t = shown(breaker::MAX_P95), value_parser = parse_duration, requires = "state", help_heading = LIMITS)]
    pub(crate) breaker_max_p95: humantime::Duration,

    /// How long an open breaker stays open before one probe; doubles on each failed probe, up to 10m
    #[arg(long, value_name = "DURATION", default_value_t = shown(breaker::COOLDOWN), value_parser = parse_duration, requires = "state", help_heading = LIMITS)]
    pub(crate) breaker_cooldown: humantime::Duration,

    #[arg(long, value_name = "JSON|@FILE|last", help = fallback_help(), help_heading = LIMITS)]
    pub(crate) fallback: Option<String>,
}

/// `--jitter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum JitterArg {
    Equal,
    Full,
    None,
}

/// `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormatArg {
    Text,
    Json,
}

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

/// `--ci`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum CiArg {
    Github,
    Gitlab,
    None,
}

/// `--state-fail`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StateFailArg {
    Open,
    Closed,
}

/// The generated files `poll --generate KIND` writes to stdout (a hidden
/// flag, outside the model above so that no completion script offers it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Generate {
    Man,
    Bash,
    Zsh,
    Fish,
    Powershell,
    Elvish,
}

/// What the command line asks for.
#[derive(Debug)]
pub(crate) enum Invocation {
    Run(Box<Cli>),
    Generate(Generate),
}

/// `poll --generate KIND`, a command of its own, so that the model above (its
/// usage line, completions and man page) never shows it; `None` for any
/// other command line.
pub(crate) fn generating(args: &[OsString]) -> Result<Option<Generate>, clap::Error> {
    let generating =
        args.get(1).and_then(|a| a.to_str()).is_some_and(|a| a == "--generate" || a.starts_with("--generate="));
    if !generating {
        return Ok(None);
    }
    let generate = clap::Arg::new("generate")
        .long("generate")
        .value_name("KIND")
        .required(true)
        .value_parser(clap::builder::EnumValueParser::<Generate>::new());
    let mut matches = clap::Command::new("poll").arg(generate).try_get_matches_from(args)?;
    Ok(Some(matches.remove_one::<Generate>("generate").unwrap_or(Generate::Man)))
}

/// Where the settings of a run came from in the environment, for `-v` and
/// for messages (`environment.rs` finds it out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Environment {
    /// Each variable that set an option, in the model's order.
    pub used: Vec<Setting>,
    /// Each variable set but not read, with why: `POLL_QUIET (the command line gives --verbose)`.
    pub ignored: Vec<String>,
}

/// A variable that set an option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Setting {
    /// `POLL_TIMEOUT`.
    pub variable: String,
    /// The option it set, as messages name it: `--timeout`.
    pub flag: String,
    /// Its value, when it may carry a secret ([`is_secret`]): no message quotes it, not even in part.
    pub secret: Option<String>,
}

impl Environment {
    /// Whether a variable set `flag` (`--insecure`).
    pub(crate) fn sets(&self, flag: &str) -> bool {
        self.used.iter().any(|setting| setting.flag == flag)
    }

    /// The variables that set an option, for `-v`.
    pub(crate) fn names(&self) -> Vec<String> {
        self.used.iter().map(|setting| setting.variable.clone()).collect()
    }

    /// The usage error about an option that a variable set (`--state: ...`),
    /// naming the variable and quoting nothing of a secret one's value.
    pub(crate) fn named_in(&self, error: Error) -> Error {
        self.used
            .iter()
            .fold(error, |error, setting| error.set_by(&setting.flag, &setting.variable, setting.secret.as_deref()))
    }
}

/// What the command line itself gives, read without the environment.
#[derive(Debug, Default)]
pub(crate) struct Given {
    /// The options on it, by id.
    pub ids: Vec<String>,
    /// It asks for the short help: `-h` before any `--help`.
    pub short_help: bool,
}

/// The probe's stand-ins for the help and version flags: plain switches, so
/// that it reads the whole command line.
const PROBE_SHORT_HELP: &str = "probe -h";
const PROBE_LONG_HELP: &str = "probe --help";
const PROBE_VERSION: &str = "probe --version";

/// What the command line gives. clap parses it leniently, without the
/// environment: no conflict or missing option stops it, and the help and
/// version flags are switches. Where clap stops at a bad argument, what
/// follows is not seen; the real parse stops there too.
pub(crate) fn given(args: &[OsString]) -> Given {
    let probe = model(Tags::None)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .arg(clap::Arg::new(PROBE_SHORT_HELP).short('h').action(ArgAction::SetTrue))
        .arg(clap::Arg::new(PROBE_LONG_HELP).long("help").action(ArgAction::SetTrue))
        .arg(clap::Arg::new(PROBE_VERSION).short('V').long("version").action(ArgAction::SetTrue))
        .ignore_errors(true);
    let Ok(matches) = probe.try_get_matches_from(args) else { return Given::default() };
    let on_the_line = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
    let ids = matches.ids().map(|id| id.as_str()).filter(|id| on_the_line(id)).map(str::to_string).collect();
    let index = |id: &str| on_the_line(id).then(|| matches.index_of(id)).flatten();
    let short_help = match (index(PROBE_SHORT_HELP), index(PROBE_LONG_HELP)) {
        (Some(short), Some(long)) => short < long,
        (short, _) => short.is_some(),
    };
    Given { ids, short_help }
}

/// The command line parsed with the variables of the options `reading` (by id) and of no other.
pub(crate) fn matches(args: &[OsString], reading: &[String]) -> Result<clap::ArgMatches, clap::Error> {
    model(Tags::Reading(reading)).try_get_matches_from(args)
}

/// The flags of a parse, with where the environment's settings came from.
pub(crate) fn cli(mut matches: clap::ArgMatches, environment: Environment) -> Result<Cli, clap::Error> {
    let mut cli = Cli::from_arg_matches_mut(&mut matches)?;
    cli.environment = environment;
    Ok(cli)
}

/// The help the command line asks for: `-h` says the `POLL_<FLAG>` rule once
/// after the options; `--help` shows each option's variable beside it.
pub(crate) fn help(short: bool) -> clap::builder::StyledStr {
    if short {
        model(Tags::None).after_help(format!("{ENVIRONMENT_RULE}\n\n{AFTER_HELP}")).render_help()
    } else {
        command().render_long_help()
    }
}

/// `-h`'s words for the variables, which `--help` shows beside each option.
const ENVIRONMENT_RULE: &str = "Every option that takes one value, and every switch, can also be set from the environment as \
    POLL_<FLAG>: the long name in capitals, - as _ (POLL_TIMEOUT=10m, POLL_VERBOSE=true). The command line wins; an \
    empty variable is unset.";

/// clap's error as one line, built from its parts (not from the rendered
/// text): what is wrong, the flag, the value (escaped, so a value with a CR
/// stays one line) and clap's suggestion. A value that came from a variable
/// (`from`: its name, and whether it may carry a secret) is named by it, and
/// a secret one's value is not quoted.
pub(crate) fn one_line(error: &clap::Error, from: Option<(&str, bool)>) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    // A value is quoted with the value of a secret header in it redacted (`-H 'Authorization: ...\r'`).
    let shown = |s: &str| printable(&crate::util::url::redact_header_line(s));
    let text = |kind| match error.get(kind) {
        Some(ContextValue::String(s)) => Some(shown(s)),
        Some(ContextValue::Strings(v)) => Some(v.iter().map(|s| shown(s)).collect::<Vec<_>>().join(", ")),
        Some(ContextValue::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg).unwrap_or_default();
    let mut value = text(ContextKind::InvalidValue).unwrap_or_default();
    if let Some((_, true)) = from {
        value = crate::util::url::REDACTED.to_string();
    }
    let mut line = match error.kind() {
        ErrorKind::InvalidValue if value.is_empty() => format!("a value is required for '{arg}' but none was supplied"),
        ErrorKind::InvalidValue => match text(ContextKind::ValidValue) {
            Some(valid) => format!("invalid value '{value}' for '{arg}' [possible values: {valid}]"),
            None => format!("invalid value '{value}' for '{arg}'"),
        },
        // The parser's reason quotes the value: a secret one's is left out.
        ErrorKind::ValueValidation if matches!(from, Some((_, true))) => format!("invalid value '{value}' for '{arg}'"),
        ErrorKind::ValueValidation => {
            let why = std::error::Error::source(error).map(|e| format!(": {}", printable(&e.to_string())));
            format!("invalid value '{value}' for '{arg}'{}", why.unwrap_or_default())
        }
        ErrorKind::UnknownArgument => format!("unexpected argument '{arg}' found"),
        ErrorKind::MissingRequiredArgument => format!("the following required arguments were not provided: {arg}"),
        ErrorKind::ArgumentConflict => match text(ContextKind::PriorArg) {
            Some(prior) => format!("the argument '{arg}' cannot be used with '{prior}'"),
            None => format!("the argument '{arg}' cannot be used with one or more of the other arguments"),
        },
        ErrorKind::TooManyValues => format!("unexpected value '{value}' for '{arg}' found; no more were expected"),
        ErrorKind::NoEquals => format!("equal sign is needed when assigning values to '{arg}'"),
        ErrorKind::WrongNumberOfValues | ErrorKind::TooFewValues => format!("wrong number of values for '{arg}'"),
        ErrorKind::InvalidUtf8 if from.is_some() => "the value is not UTF-8".to_string(),
        ErrorKind::InvalidUtf8 => "invalid UTF-8 was detected in one or more arguments".to_string(),
        kind => kind.as_str().unwrap_or("invalid arguments").to_string(),
    };
    if let Some(similar) = text(ContextKind::SuggestedArg) {
        line.push_str(&format!(" (a similar argument exists: '{similar}')"));
    } else if let Some(similar) = text(ContextKind::SuggestedValue) {
        line.push_str(&format!(" (a similar value exists: '{similar}')"));
    }
    if let Some((variable, _)) = from {
        line = format!("{variable}: {line}");
    }
    line.push_str("; see `poll --help`");
    line
}

/// The clap command, for generating completions and the man page, and for
/// `--help`: every option's variable (`[env: POLL_TIMEOUT=10m]`), the values
/// of secret ones hidden.
pub fn command() -> clap::Command {
    model(Tags::All)
}

/// Which variables the model lets clap read (and `--help` show).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tags<'a> {
    /// Every option's: `--help`, completions and the man page.
    All,
    /// None: `-h`, which says the rule once, and the probe of the command line.
    None,
    /// Only these options' (by id): a parse, as `environment.rs` decides it.
    Reading(&'a [String]),
}

/// The clap model, reading the variables `tags` names.
pub(crate) fn model(tags: Tags<'_>) -> clap::Command {
    Cli::command().mut_args(|arg| settable(arg, tags))
}

/// The options whose values may carry a secret, besides every jq filter.
const SECRET_SETTINGS: [&str; 9] =
    ["user", "auth_cmd", "state", "fallback", "data", "json", "idempotency_key", "cert", "key"];

/// Whether an option's value may carry a secret, so that `--help` hides what
/// its variable holds and no message quotes it: the credentials, the state
/// store's URL (its password), the bodies, the idempotency key, the client
/// certificate and key (curl's `FILE:PASSWORD`), and every jq filter (one
/// may compare with a token).
pub(crate) fn is_secret(arg: &clap::Arg) -> bool {
    SECRET_SETTINGS.contains(&arg.get_id().as_str())
        || arg.get_value_names().is_some_and(|names| names.iter().any(|name| name == "JQ"))
}

/// What of `value`, given to `arg` from the environment, no message may
/// quote: all of a secret option's value, but of `--cert`'s only the
/// passphrase of curl's `FILE:PASSPHRASE` (the file is named, so that a
/// missing one can be found); `None` when nothing of it is secret.
pub(crate) fn secret_in(arg: &clap::Arg, value: &std::ffi::OsStr) -> Option<String> {
    if !is_secret(arg) {
        return None;
    }
    let value = value.to_string_lossy();
    match arg.get_id().as_str() {
        "cert" => crate::util::parse::cert(&value).1,
        _ => Some(value.into_owned()),
    }
}

/// The variable that sets `arg`: `POLL_` and its long name in capitals, `-`
/// as `_` (`POLL_TIMEOUT`, `POLL_REQUEST` for `-X, --request`), for every
/// option that takes one value and every switch. Repeatable options, the
/// URLs, and `--help`'s and `--version`'s own have none.
pub(crate) fn variable(arg: &clap::Arg) -> Option<String> {
    // A status list (`--done-on 404,410`) is one value, split at its commas; `-H` and `--arg` repeat.
    let repeatable = (matches!(arg.get_action(), ArgAction::Append) && arg.get_value_delimiter().is_none())
        || arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let own =
        matches!(arg.get_action(), ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version);
    if arg.is_positional() || repeatable || own || arg.is_hide_set() {
        return None;
    }
    Some(format!("POLL_{}", arg.get_long()?.replace('-', "_").to_ascii_uppercase()))
}

/// `POLL_<FLAG>` on an option, when `tags` lets clap read it, as CI
/// templates set them once for many calls. A switch is read as scripts write
/// one (true, yes, on, 1 or false, no, off, 0), `-v` as a level too, also
/// where no variable is read, so that every parse gives the same types.
fn settable(arg: clap::Arg, tags: Tags<'_>) -> clap::Arg {
    let Some(variable) = variable(&arg) else { return arg };
    let arg = match arg.get_action() {
        ArgAction::SetTrue => arg.value_parser(clap::builder::BoolishValueParser::new()),
        ArgAction::Count => arg.value_parser(level),
        _ => arg,
    };
    let reads = match tags {
        Tags::All => true,
        Tags::None => false,
        Tags::Reading(ids) => ids.iter().any(|id| id == arg.get_id().as_str()),
    };
    if !reads {
        return arg;
    }
    let secret = is_secret(&arg);
    arg.env(variable).hide_env_values(secret)
}

/// Whether a switch's variable reads as off (`false`, `0`; `-v`'s `0`): it
/// sets nothing, so it can clash with nothing. A value that is neither on
/// nor off is not off: clap says what is wrong with it.
pub(crate) fn is_off(arg: &clap::Arg, value: &std::ffi::OsStr) -> bool {
    let text = value.to_str().unwrap_or_default();
    match arg.get_action() {
        ArgAction::SetTrue => boolish(text).is_ok_and(|on| !on),
        ArgAction::Count => level(text) == Ok(0),
        _ => false,
    }
}

/// `true`, `yes`, `on`, `1` (and `false`, `no`, `off`, `0`), as clap reads a switch's variable.
fn boolish(value: &str) -> Result<bool, clap::Error> {
    clap::builder::TypedValueParser::parse_ref(
        &clap::builder::BoolishValueParser::new(),
        &clap::Command::new("poll"),
        None,
        std::ffi::OsStr::new(value),
    )
}

/// `POLL_VERBOSE`: a switch (`true` is `-v`) or a level (`2` is `-vv`).
fn level(value: &str) -> Result<u8, String> {
    match (value.parse::<u8>(), boolish(value)) {
        (Ok(level), _) => Ok(level.min(3)),
        (_, Ok(on)) => Ok(u8::from(on)),
        _ => Err(format!("`{value}` is neither true nor false nor a level (0 to 3)")),
    }
}

/// A byte size, shown as `--help` shows a default: `16MiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size(pub u64);

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            n if n >= 1 << 20 && n % (1 << 20) == 0 => write!(f, "{}MiB", n >> 20),
            n if n >= 1 << 10 && n % (1 << 10) == 0 => write!(f, "{}KiB", n >> 10),
            n => write!(f, "{n}"),
        }
    }
}

/// A default duration as `--help` shows it (`1s`, `200ms`, `5m`).
fn shown(d: Duration) -> humantime::Duration {
    d.into()
}

fn parse_duration(text: &str) -> Result<humantime::Duration, String> {
    parse::duration(text).map(Into::into)
}

fn parse_size(text: &str) -> Result<Size, String> {
    parse::size(text).map(Size)
}

/// One `-H`: a header, or a file of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HeaderArg {
    /// `-H 'Name: value'`.
    Field(String, String),
    /// `-H @FILE`: headers read from FILE, and again whenever it changes.
    File(std::path::PathBuf),
}

fn parse_header(text: &str) -> Result<HeaderArg, String> {
    match text.strip_prefix('@') {
        Some("-") => {
            Err("@- (headers from stdin) is not supported: give a file, which is read again when it changes".into())
        }
        Some("") => Err("@ needs a file name: -H @FILE".into()),
        Some(path) => Ok(HeaderArg::File(path.into())),
        None => parse::header(text).map(|(name, value)| HeaderArg::Field(name, value)),
    }
}

fn parse_status(text: &str) -> Result<u16, String> {
    parse::status(text)
}

/// One value of `--done-on`: a status, or `refused` (nothing listens there any more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DoneOn {
    Status(u16),
    Refused,
}

fn parse_done_on(text: &str) -> Result<DoneOn, String> {
    match text.trim() {
        word if word.eq_ignore_ascii_case("refused") => Ok(DoneOn::Refused),
        _ => parse::status(text).map(DoneOn::Status).map_err(|e| format!("{e}, or refused")),
    }
}

fn parse_rate(text: &str) -> Result<Rate, String> {
    match text.trim() {
        "auto" => Ok(Rate::Auto),
        _ => parse::rate(text).map(Rate::Every),
    }
}

fn parse_retry_budget(text: &str) -> Result<RetryBudget, String> {
    crate::rules::budget::parse(text)
}

fn parse_percent(text: &str) -> Result<u8, String> {
    parse::percent(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("poll").chain(args.iter().copied()))
    }

    #[test]
    fn the_clap_model_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn defaults_come_from_the_modules_that_use_them() {
        let Ok(cli) = parse(&["http://127.0.0.1/"]) else { panic!("a bare URL parses") };
        assert_eq!(*cli.connect_timeout, Duration::from_secs(10));
        assert_eq!(*cli.request_timeout, Duration::from_secs(30));
        assert_eq!(cli.max_redirs, 10);
        assert_eq!(cli.max_body, Size(16 << 20));
        assert_eq!(cli.max_body.to_string(), "16MiB");
        assert_eq!(*cli.interval, Duration::from_secs(1));
        assert_eq!(*cli.timeout, Duration::from_secs(300));
        assert_eq!(cli.retries, 6);
        assert_eq!(*cli.backoff, Duration::from_millis(200));
        assert_eq!(*cli.backoff_max, Duration::from_secs(30));
        assert_eq!(cli.jitter, JitterArg::Equal);
        assert_eq!(cli.stable, 1);
        let limits = &cli.limits;
        assert_eq!(limits.rate, None);
        assert_eq!(limits.state, None);
        assert_eq!(limits.breaker_window, 10);
        assert_eq!(limits.breaker_min_success, 60);
        assert_eq!(limits.breaker_min_success, breaker::MIN_SUCCESS);
        assert_eq!(*limits.breaker_max_p95, Duration::from_secs(5));
        assert_eq!(*limits.breaker_cooldown, Duration::from_secs(30));
        assert_eq!(limits.fallback, None);
        assert_eq!(limits.state_fail, StateFailArg::Open);
    }

    #[test]
    fn rate_limit_flags() {
        let Ok(cli) = parse(&["--rate", "5/10s", "--state", "s.json", "--breaker-min-success", "75", "http://x/"])
        else {
            panic!("parses")
        };
        assert_eq!(cli.limits.rate, Some(Rate::Every(Duration::from_secs(2))));
        assert_eq!(cli.limits.breaker_min_success, 75);
        // The breaker flags mean nothing without --state.
        let err = parse(&["--breaker-cooldown", "1s", "http://x/"]).err().map(|e| e.exit_code());
        assert_eq!(err, Some(2));
    }

    #[test]
    fn retry_on_takes_a_list_and_repeats() {
        let Ok(cli) = parse(&["--retry-on", "404,409", "--retry-on", "418", "http://x/"]) else { panic!("parses") };
        assert_eq!(cli.retry_on, vec![404, 409, 418]);
    }

    #[test]
    fn several_urls_are_taken_in_order() {
        let Ok(cli) = parse(&["http://a/", "--any", "http://b/"]) else { panic!("parses") };
        assert_eq!(cli.urls, ["http://a/", "http://b/"]);
        assert!(cli.any);
    }

    #[test]
    fn the_hidden_generator_is_exclusive_and_absent_from_the_model() {
        let asked = |args: &[&str]| generating(&args.iter().map(OsString::from).collect::<Vec<_>>());
        assert!(matches!(asked(&["poll", "--generate", "man"]), Ok(Some(Generate::Man))));
        assert!(matches!(asked(&["poll", "--generate=zsh"]), Ok(Some(Generate::Zsh))));
        assert!(matches!(asked(&["poll", "http://x/"]), Ok(None)));
        assert!(asked(&["poll", "--generate", "man", "http://x/"]).is_err());
        assert!(asked(&["poll", "--generate", "nroff"]).is_err());
        assert!(command().get_arguments().all(|arg| arg.get_id() != "generate"));
        // The URL stays required in the model: the usage line says so.
        assert!(command().render_usage().to_string().contains("<URL>..."));
    }

    #[test]
    fn each_variable_is_its_options_long_name_and_secret_ones_are_hidden_in_the_help() {
        let mut command = command();
        command.build();
        let variables: Vec<(String, bool)> = command
            .get_arguments()
            .filter_map(|arg| variable(arg).map(|v| (v, arg.is_hide_env_values_set())))
            .collect();
        let find = |name: &str| variables.iter().find(|(v, _)| v == name).map(|(_, hidden)| *hidden);
        assert_eq!(find("POLL_REQUEST"), Some(false), "-X, --request");
        assert_eq!(find("POLL_METHOD"), None);
        assert_eq!(find("POLL_TIMEOUT"), Some(false));
        assert_eq!(find("POLL_HEADER"), None, "-H repeats");
        // The contract's list: -u, --auth-cmd, --state, --fallback, -d, --json, --idempotency-key, --cert, --key,
        // and any filter.
        for secret in [
            "POLL_USER",
            "POLL_AUTH_CMD",
            "POLL_STATE",
            "POLL_FALLBACK",
            "POLL_DATA",
            "POLL_JSON",
            "POLL_IDEMPOTENCY_KEY",
            "POLL_CERT",
            "POLL_KEY",
            "POLL_UNTIL",
            "POLL_FAIL_WHEN",
            "POLL_PENDING_WHEN",
            "POLL_SHOW",
            "POLL_PRINT",
            "POLL_STATUS_URL",
            "POLL_NEXT",
        ] {
            assert_eq!(find(secret), Some(true), "{secret}");
        }
        let hidden = variables.iter().filter(|(_, hidden)| *hidden).count();
        assert_eq!(hidden, 16, "{variables:?}");
    }

    #[test]
    fn a_switch_set_to_false_is_off() {
        let mut command = command();
        command.build();
        let arg = |id: &str| command.get_arguments().find(|a| a.get_id() == id).cloned();
        let (Some(insecure), Some(verbose), Some(timeout)) = (arg("insecure"), arg("verbose"), arg("timeout")) else {
            panic!("the model has them")
        };
        for (value, off) in [("false", true), ("no", true), ("0", true), ("true", false), ("maybe", false)] {
            assert_eq!(is_off(&insecure, std::ffi::OsStr::new(value)), off, "{value}");
        }
        assert!(is_off(&verbose, std::ffi::OsStr::new("0")) && !is_off(&verbose, std::ffi::OsStr::new("2")));
        assert!(!is_off(&timeout, std::ffi::OsStr::new("0")));
    }

    #[test]
    fn bad_values_are_usage_errors() {
        for args in [
            &["--interval", "soon", "http://x/"][..],
            &["--max-body", "lots", "http://x/"],
            &["-H", "Bad Header", "http://x/"],
            &["--retry-on", "abc", "http://x/"],
            &["-d", "a", "--json", "{}", "http://x/"],
            &["-v", "-q", "http://x/"],
            &["--jitter", "some", "http://x/"],
            &["--rate", "0/s", "http://x/"],
            &["--state", "s", "--breaker-min-success", "101%", "http://x/"],
            &["--stable", "0", "http://x/"],
            &["--status-url", ".url", "http://x/"],
            &["--state-fail", "closed", "http://x/"],
            &["--ci", "travis", "http://x/"],
            &["--unix-socket", "http://x/"],
            &[],
        ] {
            let err = parse(args).err().map(|e| e.exit_code());
            assert_eq!(err, Some(2), "{args:?}");
        }
    }
}

//! The command line: clap's derive model of every flag, with value parsers
//! that reject bad input before anything is sent. `config.rs` turns it into a `Config`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, Parser, ValueEnum};

use crate::output::{ColorChoice, LogFormat};
use crate::parse;

const REQUEST: &str = "Request";
const CONDITION: &str = "Condition";
const SCHEDULE: &str = "Schedule and retries";
const OUTPUT: &str = "Output";
const LIMITS: &str = "Rate limits and shared state";

const EXAMPLES: &str = "\
Examples:
  Wait for a job, fail fast if it fails, give up after 10 minutes:
    poll --until '.status==\"done\"' --fail-when '.status==\"failed\"' --timeout 10m \"$JOB_URL\"

  Wait until a service is healthy (any 2xx), retrying 503s and refused connections:
    poll --timeout 2m --interval 2s http://localhost:8080/healthz

  Start a job with POST and read its result with jq:
    poll --json '{\"name\":\"build\"}' --until '.ready' https://ci.example.com/builds | jq .artifact

  Let parallel CI jobs share one rate budget and circuit breaker, with a fallback body:
    poll --state /tmp/api.state --rate 10/s --fallback '{\"status\":\"unknown\"}' \"$STATUS_URL\"

Exit codes:
  0  condition met (without --until: a 2xx arrived)
  1  deadline: --timeout passed, or would pass before the next attempt
  2  usage: bad flag, URL, duration, header, JSON body or jq filter; nothing sent
  3  permanent failure: a non-retryable status or error
  4  --fail-when matched
  5  gave up: --retries spent, or a POST/PATCH that may not be re-sent
  6  circuit open: the breaker for this origin is open (only with --state)
  130/143  interrupted by SIGINT / SIGTERM";

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
        over the backoff. The final body goes to stdout; the exit code tells what happened.",
    after_help = "Use --help for examples and the exit codes.",
    after_long_help = EXAMPLES,
    max_term_width = 100
)]
pub struct Cli {
    /// The URL to poll (http:// or https://)
    #[arg(value_name = "URL")]
    pub url: String,

    /// HTTP method [default: GET, or POST when a body is given]
    #[arg(short = 'X', long = "request", value_name = "METHOD", help_heading = REQUEST)]
    pub method: Option<String>,

    /// Extra header 'Name: value'; repeatable
    #[arg(short = 'H', long = "header", value_name = "HEADER", value_parser = parse_header, help_heading = REQUEST)]
    pub headers: Vec<(String, String)>,

    /// Request body; @FILE reads a file, @- reads stdin
    #[arg(short = 'd', long, value_name = "DATA", conflicts_with = "json", help_heading = REQUEST)]
    pub data: Option<String>,

    /// JSON request body (validated), with Content-Type and Accept set to application/json; @FILE and @- too
    #[arg(long, value_name = "JSON", help_heading = REQUEST)]
    pub json: Option<String>,

    /// Basic authentication, USER[:PASSWORD]
    #[arg(short = 'u', long, value_name = "USER[:PASS]", help_heading = REQUEST)]
    pub user: Option<String>,

    /// User-Agent header [default: poll/<version>]
    #[arg(short = 'A', long, value_name = "UA", help_heading = REQUEST)]
    pub user_agent: Option<String>,

    /// Connect timeout of one attempt
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, help_heading = REQUEST)]
    pub connect_timeout: Duration,

    /// Timeout of one whole attempt, from connect to the last body byte
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, help_heading = REQUEST)]
    pub request_timeout: Duration,

    /// Redirects followed; 0 follows none
    #[arg(long, value_name = "N", default_value_t = 10, help_heading = REQUEST)]
    pub max_redirs: u32,

    /// Largest body read, after decompression (e.g. 512KiB, 16MiB); larger is a permanent error
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = parse_size, help_heading = REQUEST)]
    pub max_body: u64,

    /// Accept any TLS certificate
    #[arg(short = 'k', long, help_heading = REQUEST)]
    pub insecure: bool,

    /// Extra CA certificates (PEM) to trust, besides the built-in roots
    #[arg(long, value_name = "FILE", help_heading = REQUEST)]
    pub cacert: Option<PathBuf>,

    /// Done when this jq filter's first output is truthy on a 2xx JSON body
    #[arg(long, value_name = "JQ", help_heading = CONDITION)]
    pub until: Option<String>,

    /// Stop with exit 4 when this jq filter is truthy on a 2xx JSON body (checked before --until)
    #[arg(long, value_name = "JQ", help_heading = CONDITION)]
    pub fail_when: Option<String>,

    /// Wait between polls while the condition is not met yet
    #[arg(short = 'i', long, value_name = "DURATION", default_value = "1s", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub interval: Duration,

    /// Overall deadline for the whole run; 0 means none
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub timeout: Duration,

    /// Consecutive transient failures tolerated; resets on every healthy 2xx
    #[arg(long, value_name = "N", default_value_t = 6, help_heading = SCHEDULE)]
    pub retries: u32,

    /// First retry delay; doubles on each consecutive failure
    #[arg(long, value_name = "DURATION", default_value = "200ms", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub backoff: Duration,

    /// Retry delay cap
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, help_heading = SCHEDULE)]
    pub backoff_max: Duration,

    /// Randomise retry delays: equal = [d/2, d], full = [0, d], none = d
    #[arg(long, value_name = "MODE", value_enum, default_value_t = JitterArg::Equal, help_heading = SCHEDULE)]
    pub jitter: JitterArg,

    /// Also retry these statuses, e.g. 404,409
    #[arg(long, value_name = "CODES", value_delimiter = ',', value_parser = parse_status, help_heading = SCHEDULE)]
    pub retry_on: Vec<u16>,

    /// Retry POST and PATCH like GET, even when the request may have been processed
    #[arg(long, help_heading = SCHEDULE)]
    pub retry_non_idempotent: bool,

    /// Write the final body to FILE (atomically) instead of stdout
    #[arg(short = 'o', long, value_name = "FILE", help_heading = OUTPUT)]
    pub output: Option<PathBuf>,

    /// One line per attempt on stderr; -vv adds response headers
    #[arg(short = 'v', long, action = ArgAction::Count, conflicts_with = "quiet", help_heading = OUTPUT)]
    pub verbose: u8,

    /// Print only the final error line
    #[arg(short = 'q', long, help_heading = OUTPUT)]
    pub quiet: bool,

    /// stderr format: text, or json for one NDJSON object per attempt plus a final one
    #[arg(long, value_name = "FORMAT", value_enum, default_value_t = LogFormat::Text, help_heading = OUTPUT)]
    pub log_format: LogFormat,

    /// A jq filter whose output on each JSON body is shown in the progress line, e.g. .progress
    #[arg(long, value_name = "JQ", help_heading = OUTPUT)]
    pub show: Option<String>,

    /// Colour on stderr: auto (only on a terminal, unless NO_COLOR is set), always or never
    #[arg(long, value_name = "WHEN", value_enum, default_value_t = ColorChoice::Auto, help_heading = OUTPUT)]
    pub color: ColorChoice,

    #[command(flatten)]
    pub limits: LimitArgs,
}

/// The flags under "Rate limits and shared state".
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// At most N requests per DURATION, evenly spaced, e.g. 10/s, 100/m, 5/10s; shared through --state
    #[arg(long, value_name = "N/DURATION", value_parser = parse_rate, help_heading = LIMITS)]
    pub rate: Option<Duration>,

    /// Per-origin state shared by every poll naming FILE: rate budget, server advice, circuit breaker, last good body
    #[arg(long, value_name = "FILE", help_heading = LIMITS)]
    pub state: Option<PathBuf>,

    /// Outcomes the circuit breaker remembers per origin (5 to 1000)
    #[arg(long, value_name = "N", default_value_t = 10, requires = "state", help_heading = LIMITS)]
    pub breaker_window: u32,

    /// Open the breaker when the success rate over the window (at least 5 outcomes) falls below this
    #[arg(long, value_name = "PCT", default_value = "60%", value_parser = parse_percent, requires = "state", help_heading = LIMITS)]
    pub breaker_min_success: u8,

    /// Open the breaker when the window's p95 latency exceeds this
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, requires = "state", help_heading = LIMITS)]
    pub breaker_max_p95: Duration,

    /// How long an open breaker stays open before one probe; doubles on each failed probe, up to 10m
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, requires = "state", help_heading = LIMITS)]
    pub breaker_cooldown: Duration,

    /// Body printed when the run ends with exit 1, 5 or 6: JSON, @FILE, or last (the last good body in --state)
    #[arg(long, value_name = "JSON|@FILE|last", help_heading = LIMITS)]
    pub fallback: Option<String>,
}

/// `--jitter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JitterArg {
    Equal,
    Full,
    None,
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    parse::duration(text)
}

fn parse_size(text: &str) -> Result<u64, String> {
    parse::size(text)
}

fn parse_header(text: &str) -> Result<(String, String), String> {
    parse::header(text)
}

fn parse_status(text: &str) -> Result<u16, String> {
    parse::status(text)
}

fn parse_rate(text: &str) -> Result<Duration, String> {
    parse::rate(text)
}

fn parse_percent(text: &str) -> Result<u8, String> {
    parse::percent(text)
}

/// The clap command, for tests and for generating completions and the man page.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
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
    fn defaults_follow_the_contract() {
        let Ok(cli) = parse(&["http://127.0.0.1/"]) else { panic!("a bare URL parses") };
        assert_eq!(cli.connect_timeout, Duration::from_secs(10));
        assert_eq!(cli.request_timeout, Duration::from_secs(30));
        assert_eq!(cli.max_redirs, 10);
        assert_eq!(cli.max_body, 16 << 20);
        assert_eq!(cli.interval, Duration::from_secs(1));
        assert_eq!(cli.timeout, Duration::from_secs(300));
        assert_eq!(cli.retries, 6);
        assert_eq!(cli.backoff, Duration::from_millis(200));
        assert_eq!(cli.backoff_max, Duration::from_secs(30));
        assert_eq!(cli.jitter, JitterArg::Equal);
        let limits = &cli.limits;
        assert_eq!(limits.rate, None);
        assert_eq!(limits.state, None);
        assert_eq!(limits.breaker_window, 10);
        assert_eq!(limits.breaker_min_success, 60);
        assert_eq!(limits.breaker_max_p95, Duration::from_secs(5));
        assert_eq!(limits.breaker_cooldown, Duration::from_secs(30));
        assert_eq!(limits.fallback, None);
    }

    #[test]
    fn rate_limit_flags() {
        let Ok(cli) = parse(&["--rate", "5/10s", "--state", "s.json", "--breaker-min-success", "75", "http://x/"])
        else {
            panic!("parses")
        };
        assert_eq!(cli.limits.rate, Some(Duration::from_secs(2)));
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
            &[],
        ] {
            let err = parse(args).err().map(|e| e.exit_code());
            assert_eq!(err, Some(2), "{args:?}");
        }
    }
}

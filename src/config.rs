//! The validated run configuration. Every input error (URL, method, header,
//! body, certificate, filter, output path) surfaces here, before the first request.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;

use crate::breaker;
use crate::cli::{Cli, JitterArg, LimitArgs};
use crate::condition::{Conditions, Filter};
use crate::error::Error;
use crate::output::Style;
use crate::parse;
use crate::policy::{Jitter, Policy};

/// Everything a run needs, checked.
#[derive(Debug)]
pub struct Config {
    pub request: RequestSpec,
    pub conditions: Conditions,
    pub policy: Policy,
    /// `--timeout`; `None` for 0 (no deadline).
    pub timeout: Option<Duration>,
    pub output: OutputSpec,
    pub limits: Limits,
}

/// `--rate`, `--state`, the circuit breaker and `--fallback`.
#[derive(Debug, Clone, Default)]
pub struct Limits {
    /// `--rate`, as the spacing between two requests.
    pub rate: Option<Duration>,
    /// `--state`: its folder exists.
    pub state: Option<PathBuf>,
    pub breaker: breaker::Settings,
    pub fallback: Option<Fallback>,
}

/// `--fallback`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// A JSON body (given inline or from a file), already validated.
    Body(Vec<u8>),
    /// The last good body of this URL kept in `--state`.
    Last,
}

/// The one request a run repeats.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub method: String,
    pub url: String,
    /// Extra headers, in order; `Authorization` from `-u` included.
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub user_agent: String,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub max_redirects: u32,
    pub max_body: u64,
    pub insecure: bool,
    /// PEM bytes of `--cacert`, already checked to hold a certificate.
    pub cacert: Option<Vec<u8>>,
}

/// Where and how results are shown.
#[derive(Debug, Clone, Default)]
pub struct OutputSpec {
    /// `-o`: the body goes here instead of stdout.
    pub file: Option<PathBuf>,
    pub style: Style,
}

impl Config {
    /// Validates the flags; `stdin` is read only for `@-`.
    pub fn from_cli(cli: Cli, stdin: &mut dyn Read) -> Result<Config, Error> {
        let (url, url_credentials) = check_url(&cli.url)?;

        let mut headers = cli.headers;
        let user_agent = cli.user_agent.unwrap_or_else(|| format!("poll/{}", env!("CARGO_PKG_VERSION")));
        parse::check_header_value("User-Agent", &user_agent).map_err(|e| usage("--user-agent", e))?;

        if let Some(credentials) = cli.user.or(url_credentials) {
            parse::check_header_value("Authorization", &credentials).map_err(|e| usage("--user", e))?;
            let credentials = if credentials.contains(':') { credentials } else { format!("{credentials}:") };
            let encoded = base64::engine::general_purpose::STANDARD.encode(credentials);
            headers.retain(|(name, _)| !name.eq_ignore_ascii_case("authorization"));
            headers.push(("Authorization".into(), format!("Basic {encoded}")));
        }

        let body = match (cli.data, cli.json) {
            (Some(data), _) => {
                let body = read_body("--data", &data, stdin)?;
                // As curl -d; `-H 'Content-Type: ...'` replaces it.
                set_default(&mut headers, "Content-Type", "application/x-www-form-urlencoded");
                Some(body)
            }
            (None, Some(json)) => {
                let body = read_body("--json", &json, stdin)?;
                if let Err(e) = serde_json::from_slice::<serde_core::de::IgnoredAny>(&body) {
                    return Err(usage("--json", format!("body is not valid JSON: {e}")));
                }
                set_default(&mut headers, "Content-Type", "application/json");
                set_default(&mut headers, "Accept", "application/json");
                Some(body)
            }
            (None, None) => None,
        };

        let method = match cli.method {
            Some(method) => check_method(&method)?,
            None if body.is_some() => "POST".to_string(),
            None => "GET".to_string(),
        };

        let cacert = cli.cacert.as_deref().map(read_cacert).transpose()?;

        let conditions = Conditions {
            until: cli.until.as_deref().map(|f| compile("--until", f)).transpose()?,
            fail_when: cli.fail_when.as_deref().map(|f| compile("--fail-when", f)).transpose()?,
            show: cli.show.as_deref().map(|f| compile("--show", f)).transpose()?,
        };

        if let Some(file) = &cli.output {
            check_file_path("--output", file)?;
        }

        let limits = check_limits(&cli.limits, stdin)?;

        if cli.backoff_max < cli.backoff {
            return Err(usage(
                "--backoff-max",
                format!(
                    "{} is shorter than --backoff {}",
                    humantime::format_duration(cli.backoff_max),
                    humantime::format_duration(cli.backoff)
                ),
            ));
        }

        let policy = Policy {
            interval: cli.interval,
            backoff: cli.backoff,
            backoff_max: cli.backoff_max,
            jitter: match cli.jitter {
                JitterArg::Equal => Jitter::Equal,
                JitterArg::Full => Jitter::Full,
                JitterArg::None => Jitter::None,
            },
            retries: cli.retries,
            retry_on: cli.retry_on,
            idempotent: is_idempotent(&method),
            retry_non_idempotent: cli.retry_non_idempotent,
        };

        Ok(Config {
            request: RequestSpec {
                method,
                url,
                headers,
                body,
                user_agent,
                connect_timeout: cli.connect_timeout,
                request_timeout: cli.request_timeout,
                max_redirects: cli.max_redirs,
                max_body: cli.max_body,
                insecure: cli.insecure,
                cacert,
            },
            conditions,
            policy,
            timeout: (!cli.timeout.is_zero()).then_some(cli.timeout),
            output: OutputSpec {
                file: cli.output,
                style: Style {
                    verbose: cli.verbose,
                    quiet: cli.quiet,
                    log_format: cli.log_format,
                    color: cli.color,
                    deadline: (!cli.timeout.is_zero()).then_some(cli.timeout),
                },
            },
            limits,
        })
    }
}

fn usage(flag: &str, message: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{flag}: {message}"))
}

/// Checks the URL and splits off `user:password@`, which becomes basic auth
/// (as in curl) so it never travels in the URL or shows in logs.
fn check_url(raw: &str) -> Result<(String, Option<String>), Error> {
    let bad = |why: &str| Error::Usage(format!("invalid URL `{}`: {why}", redact_userinfo(raw)));
    let Some(parts) = UrlParts::split(raw) else {
        return Err(bad("it needs a scheme, e.g. http://host/path or https://host/path"));
    };
    if !parts.scheme.eq_ignore_ascii_case("http") && !parts.scheme.eq_ignore_ascii_case("https") {
        return Err(bad("only http:// and https:// are supported"));
    }
    let credentials = parts.userinfo.map(percent_decode);
    // A fragment never goes on the wire; drop it as curl does.
    let path = parts.rest.split('#').next().unwrap_or_default();
    let url = format!("{}://{}{path}", parts.scheme, parts.host);
    let uri: ureq::http::Uri = url.parse().map_err(|e| bad(&format!("{e}")))?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("it has no host"));
    }
    Ok((url, credentials))
}

/// A URL cut at its authority: `scheme://[userinfo@]host` and the rest.
struct UrlParts<'a> {
    scheme: &'a str,
    userinfo: Option<&'a str>,
    host: &'a str,
    /// Path, query and fragment.
    rest: &'a str,
}

impl<'a> UrlParts<'a> {
    fn split(url: &'a str) -> Option<UrlParts<'a>> {
        let (scheme, after) = url.split_once("://")?;
        let (authority, rest) = after.split_at(after.find(['/', '?', '#']).unwrap_or(after.len()));
        let (userinfo, host) = match authority.rsplit_once('@') {
            Some((userinfo, host)) => (Some(userinfo), host),
            None => (None, authority),
        };
        Some(UrlParts { scheme, userinfo, host, rest })
    }
}

/// The URL with any `user:password@` replaced, for messages.
pub fn redact_userinfo(url: &str) -> String {
    match UrlParts::split(url) {
        Some(parts) if parts.userinfo.is_some() => {
            format!("{}://<redacted>@{}{}", parts.scheme, parts.host, parts.rest)
        }
        _ => url.to_string(),
    }
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn check_method(method: &str) -> Result<String, Error> {
    let is_token =
        !method.is_empty() && method.chars().all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c));
    if !is_token {
        return Err(usage("--request", format!("`{}` is not an HTTP method", method.escape_debug())));
    }
    Ok(method.to_string())
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

/// `DATA`, `@file` or `@-`.
fn read_body(flag: &str, value: &str, stdin: &mut dyn Read) -> Result<Vec<u8>, Error> {
    match value.strip_prefix('@') {
        Some("-") => {
            let mut body = Vec::new();
            stdin.read_to_end(&mut body).map_err(|e| usage(flag, format!("cannot read stdin: {e}")))?;
            Ok(body)
        }
        Some(path) => std::fs::read(path).map_err(|e| usage(flag, format!("cannot read `{path}`: {e}"))),
        None => Ok(value.as_bytes().to_vec()),
    }
}

fn read_cacert(path: &Path) -> Result<Vec<u8>, Error> {
    let shown = path.display();
    let pem = std::fs::read(path).map_err(|e| usage("--cacert", format!("cannot read `{shown}`: {e}")))?;
    let certificates =
        ureq::tls::parse_pem(&pem).filter(|item| matches!(item, Ok(ureq::tls::PemItem::Certificate(_)))).count();
    if certificates == 0 {
        return Err(usage("--cacert", format!("`{shown}` holds no PEM certificate")));
    }
    Ok(pem)
}

fn compile(flag: &str, source: &str) -> Result<Filter, Error> {
    // Quote a long filter by its start only: the error line stays one readable line.
    let shown = crate::output::shorten(source);
    Filter::compile(source).map_err(|e| usage(flag, format!("`{shown}` does not compile: {e}")))
}

/// The rate-limit, shared-state and fallback flags.
fn check_limits(cli: &LimitArgs, stdin: &mut dyn Read) -> Result<Limits, Error> {
    if let Some(state) = &cli.state {
        check_file_path("--state", state)?;
    }
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
        Some("last") if cli.state.is_none() => {
            return Err(usage("--fallback", "`last` needs --state FILE, where the last good body is kept"));
        }
        Some("last") => Some(Fallback::Last),
        Some(value) => {
            let body = read_body("--fallback", value, stdin)?;
            if let Err(e) = serde_json::from_slice::<serde_core::de::IgnoredAny>(&body) {
                return Err(usage("--fallback", format!("body is not valid JSON: {e}")));
            }
            Some(Fallback::Body(body))
        }
    };
    Ok(Limits {
        rate: cli.rate,
        state: cli.state.clone(),
        breaker: breaker::Settings {
            window,
            min_success: cli.breaker_min_success,
            max_p95: breaker::duration_ms(cli.breaker_max_p95),
            cooldown: breaker::duration_ms(cli.breaker_cooldown),
        },
        fallback,
    })
}

/// A file `poll` will write (`-o`, `--state`): its folder must exist and it must not be a folder.
fn check_file_path(flag: &str, file: &Path) -> Result<(), Error> {
    let folder = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(usage(flag, format!("folder `{}` does not exist", folder.display())));
    }
    if file.is_dir() {
        return Err(usage(flag, format!("`{}` is a folder; name a file in it", file.display())));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let ok = |raw: &str| check_url(raw).map_err(|e| e.to_string());
        assert_eq!(ok("http://127.0.0.1:8080/a?b=1"), Ok(("http://127.0.0.1:8080/a?b=1".into(), None)));
        assert_eq!(ok("https://h/x#frag"), Ok(("https://h/x".into(), None)));
        assert_eq!(
            ok("http://al%40ice:s3cret@127.0.0.1/"),
            Ok(("http://127.0.0.1/".into(), Some("al@ice:s3cret".into())))
        );
        for bad in ["127.0.0.1:8080", "ftp://h/", "http://", "http:// spaces/", "http://h/\n"] {
            assert!(check_url(bad).is_err(), "{bad:?}");
        }
        let Err(e) = check_url("ftp://bob:pw@h/") else { panic!("ftp is refused") };
        assert!(!e.to_string().contains("pw"), "{e}");
    }

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

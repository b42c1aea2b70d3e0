//! A `--state` Redis URL, checked before anything is sent: one server (a
//! single node, or any node of a cluster), or the Sentinels of a failover
//! group, with the login and database the data nodes want.

use std::fmt;
use std::path::PathBuf;

use crate::util::text::{printable, shorten};
use crate::util::url;

/// The port of a `redis://` URL that names none.
const DEFAULT_PORT: u16 = 6379;
/// The port of a Sentinel that a `redis+sentinel://` URL names without one.
const SENTINEL_PORT: u16 = 26379;

/// A `--state` Redis URL, checked: `redis://[USER:PASS@]HOST[:PORT][/DB]`,
/// `rediss://...` (TLS), `redis+unix://[USER:PASS@]/PATH[?db=N]`,
/// `redis+sentinel://[USER:PASS@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]`,
/// `rediss+sentinel://...` (TLS to the data nodes), or the same under
/// Valkey's names (`valkey://`, `valkeys://`, `valkey+unix://`, `valkey+sentinel://`, `valkeys+sentinel://`).
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub(super) servers: Servers,
    /// TLS to the data nodes (never to a unix socket, nor to the Sentinels).
    pub(super) tls: bool,
    pub(super) db: i64,
    pub(super) user: Option<String>,
    pub(super) password: Option<String>,
    /// The password as given and percent-decoded: scrubbed from every message.
    pub(super) secrets: Vec<String>,
    /// The URL as given, with any userinfo redacted.
    pub(super) shown: String,
}

/// Where the data is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Servers {
    /// One server: a single node, or any node of a cluster (found out at the first step).
    Node(Addr),
    /// Sentinels to ask for the address of the master they call `master`.
    Sentinel { sentinels: Vec<Addr>, master: String },
}

/// A server's address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Addr {
    /// A host name or IP address (an IPv6 one without its brackets).
    Tcp { host: String, port: u16 },
    /// Not checked for existence: the server may start later.
    Unix(PathBuf),
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Tcp { host, port } if host.contains(':') => write!(f, "[{host}]:{port}"),
            Addr::Tcp { host, port } => write!(f, "{host}:{port}"),
            Addr::Unix(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Never shows the password: `Config` is `Debug`.
impl fmt::Debug for RedisUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RedisUrl").field(&self.shown).finish()
    }
}

/// The login and the text that names the servers, from a URL's authority.
struct Login {
    user: Option<String>,
    password: Option<String>,
    secrets: Vec<String>,
}

impl Login {
    /// From the userinfo as written (still percent-encoded): `USER:PASS`, `:PASS`, or none.
    fn of(user: &str, password: Option<&str>) -> Result<Login, &'static str> {
        match (user, password) {
            ("", None) => Ok(Login { user: None, password: None, secrets: Vec::new() }),
            (_, None | Some("")) => Err("a user needs a password: USER:PASS@HOST, or :PASS@HOST"),
            (user, Some(pass)) => {
                let password = url::percent_decode(pass);
                let secrets = vec![password.clone(), pass.to_string()];
                Ok(Login {
                    user: Some(url::percent_decode(user)).filter(|u| !u.is_empty()),
                    password: Some(password),
                    secrets,
                })
            }
        }
    }
}

/// A `--state` URL for messages: its login redacted, and every query value
/// but `db`'s (redis-rs reads a password from `?pass=` and `?password=` too).
fn for_messages(raw: &str) -> String {
    let shown = url::redact_userinfo(raw);
    let Some((base, query)) = shown.split_once('?') else { return shown };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if !key.eq_ignore_ascii_case("db") => format!("{key}={}", url::REDACTED),
            _ => pair.to_string(),
        })
        .collect();
    format!("{base}?{}", query.join("&"))
}

impl RedisUrl {
    /// Whether `value` names a Redis store (or tries to: any `scheme://`).
    pub(crate) fn is_url(value: &str) -> bool {
        value.contains("://")
    }

    /// The URL for messages, userinfo redacted.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Checks a `--state` URL; the error never holds the password.
    pub(crate) fn parse(raw: &str) -> Result<RedisUrl, String> {
        let shown = for_messages(raw);
        let bad = |why: &str| format!("invalid Redis URL `{}`: {why}", printable(&shown));
        let scheme = raw.split_once("://").map_or(raw, |(scheme, _)| scheme).to_ascii_lowercase();
        let kind = match Scheme::of(&scheme) {
            Some(Scheme::Sentinel { tls }) => return sentinel(raw, tls, shown.clone()).map_err(|why| bad(&why)),
            Some(kind) => kind,
            None => {
                return Err(format!(
                    "`{}://` is not a state store this poll knows; give a file path, or a redis://, rediss://, \
                 redis+unix://, redis+sentinel://, rediss+sentinel://, valkey://, valkeys://, valkey+unix://, \
                 valkey+sentinel:// or valkeys+sentinel:// URL",
                    printable(&shorten(&scheme))
                ));
            }
        };
        // `redis+unix://:PASS@/PATH` has a login but no host, which the url crate
        // refuses: such a URL is parsed with a stand-in host, taken out again below.
        let stand_in = match (kind, raw.split_once("://")) {
            (Scheme::Unix, Some((scheme, rest))) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                authority.ends_with('@').then(|| format!("{scheme}://{authority}{UNIX_HOST}{path}"))
            }
            _ => None,
        };
        let parsed = ::url::Url::parse(stand_in.as_deref().unwrap_or(raw)).map_err(|e| bad(why_not(e)))?;
        if parsed.fragment().is_some() {
            return Err(bad("a fragment (`#...`) means nothing here"));
        }
        let login = Login::of(parsed.username(), parsed.password()).map_err(bad)?;
        let host = match parsed.host_str() {
            Some(UNIX_HOST) if stand_in.is_some() => "",
            host => host.unwrap_or_default(),
        };
        let path = parsed.path();

        let (addr, db) = if kind == Scheme::Unix {
            if !host.is_empty() {
                return Err(bad("a unix socket URL names no host: redis+unix:///PATH"));
            }
            if path.len() < 2 {
                return Err(bad("it names no socket: redis+unix:///PATH"));
            }
            let mut db = 0;
            for (name, value) in parsed.query_pairs() {
                if name != "db" {
                    return Err(bad("the only query it takes is ?db=N"));
                }
                db = database(&value).ok_or_else(|| bad(&format!("`{value}` is not a database number")))?;
            }
            (Addr::Unix(PathBuf::from(url::percent_decode(path))), db)
        } else {
            if parsed.query().is_some() {
                return Err(bad("a query (`?...`) means nothing here; the database is the path, /0, /1, ..."));
            }
            let addr = tcp_addr(&parsed, DEFAULT_PORT).map_err(|why| bad(&why))?;
            let db = match path.trim_start_matches('/') {
                "" => 0,
                db => database(db).ok_or_else(|| bad(&format!("the path `{path}` is not a database number")))?,
            };
            (addr, db)
        };
        let tls = kind == Scheme::Tcp { tls: true };
        let Login { user, password, secrets } = login;
        Ok(RedisUrl { servers: Servers::Node(addr), tls, db, user, password, secrets, shown })
    }
}

/// `redis+sentinel://[USER:PASS@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]`:
/// the url crate takes one host only, so the authority is split here and each
/// host checked by the url crate on its own.
fn sentinel(raw: &str, tls: bool, shown: String) -> Result<RedisUrl, String> {
    let rest = raw.split_once("://").map_or("", |(_, rest)| rest);
    if rest.contains('#') {
        return Err("a fragment (`#...`) means nothing here".into());
    }
    if rest.contains('?') {
        return Err("a query (`?...`) means nothing here; the master and database are the path, /MASTER/DB".into());
    }
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (userinfo, hosts) = authority.rsplit_once('@').unwrap_or(("", authority));
    let (user, password) = match userinfo.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (userinfo, None),
    };
    let login = if authority.contains('@') && userinfo.is_empty() {
        return Err("a user needs a password: USER:PASS@HOST, or :PASS@HOST".into());
    } else {
        Login::of(user, password)?
    };
    let mut sentinels = Vec::new();
    for host in hosts.split(',') {
        if host.is_empty() {
            return Err("it names no Sentinel: redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER".into());
        }
        let parsed = ::url::Url::parse(&format!("redis://{host}")).map_err(|e| why_not(e).to_string())?;
        if parsed.path() != "" && parsed.path() != "/" {
            return Err(format!("`{}` is not HOST[:PORT]", printable(host)));
        }
        sentinels.push(tcp_addr(&parsed, SENTINEL_PORT)?);
    }
    let mut parts = path.strip_prefix('/').unwrap_or(path).splitn(2, '/');
    let master = url::percent_decode(parts.next().unwrap_or_default());
    if master.is_empty() {
        return Err("it names no master: redis+sentinel://HOST[:PORT]/MASTER[/DB]".into());
    }
    let db = match parts.next().unwrap_or_default().trim_end_matches('/') {
        "" => 0,
        db => database(db).ok_or_else(|| format!("`{}` is not a database number", printable(db)))?,
    };
    let Login { user, password, secrets } = login;
    Ok(RedisUrl { servers: Servers::Sentinel { sentinels, master }, tls, db, user, password, secrets, shown })
}

/// The url crate's refusal in words.
fn why_not(e: ::url::ParseError) -> &'static str {
    match e {
        ::url::ParseError::EmptyHost => "it has no host",
        ::url::ParseError::InvalidPort => "the port is not a number from 1 to 65535",
        ::url::ParseError::InvalidIpv6Address => "the IPv6 address in `[...]` is not one",
        ::url::ParseError::RelativeUrlWithoutBase => "it needs a scheme",
        _ => "the host is not a host name or address",
    }
}

/// The host and port of a parsed URL, `port` when it names none.
fn tcp_addr(parsed: &::url::Url, port: u16) -> Result<Addr, String> {
    let host = match parsed.host() {
        None => return Err("it has no host".into()),
        Some(::url::Host::Ipv6(ip)) => ip.to_string(),
        Some(_) => parsed.host_str().unwrap_or_default().to_ascii_lowercase(),
    };
    if host.is_empty() {
        return Err("it has no host".into());
    }
    if matches!(host.as_str(), "0.0.0.0" | "::") {
        return Err(format!("`{host}` is where a server listens, not an address to connect to"));
    }
    let port = match parsed.port() {
        None => port,
        Some(0) => return Err("port `0` is not a number from 1 to 65535".into()),
        Some(port) => port,
    };
    Ok(Addr::Tcp { host, port })
}

/// The stand-in host of a unix socket URL with a login (see [`RedisUrl::parse`]).
const UNIX_HOST: &str = "unix-socket.invalid";

/// What a scheme names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Tcp { tls: bool },
    Unix,
    Sentinel { tls: bool },
}

impl Scheme {
    /// The redis schemes, and Valkey's names for the same (it speaks the same protocol).
    fn of(scheme: &str) -> Option<Scheme> {
        match scheme {
            "redis" | "valkey" => Some(Scheme::Tcp { tls: false }),
            "rediss" | "valkeys" => Some(Scheme::Tcp { tls: true }),
            "redis+unix" | "valkey+unix" => Some(Scheme::Unix),
            "redis+sentinel" | "valkey+sentinel" => Some(Scheme::Sentinel { tls: false }),
            "rediss+sentinel" | "valkeys+sentinel" => Some(Scheme::Sentinel { tls: true }),
            _ => None,
        }
    }
}

/// A database number: digits only.
fn database(text: &str) -> Option<i64> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(raw: &str) -> RedisUrl {
        RedisUrl::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"))
    }

    fn tcp(host: &str, port: u16) -> Addr {
        Addr::Tcp { host: host.into(), port }
    }

    #[test]
    fn urls_name_the_server_the_database_and_the_login() {
        let node = |host: &str, port| Servers::Node(tcp(host, port));
        let unix = |path: &str| Servers::Node(Addr::Unix(path.into()));
        let rows = [
            ("redis://127.0.0.1", node("127.0.0.1", 6379), false, 0, None, None),
            ("REDIS://Cache.Internal:6380/2", node("cache.internal", 6380), false, 2, None, None),
            ("rediss://h:6390/", node("h", 6390), true, 0, None, None),
            ("redis://[::1]:7000/15", node("::1", 7000), false, 15, None, None),
            ("redis://:s3cret@h", node("h", 6379), false, 0, None, Some("s3cret")),
            ("redis://bob:p%40ss@h/1", node("h", 6379), false, 1, Some("bob"), Some("p@ss")),
            ("redis+unix:///run/redis.sock", unix("/run/redis.sock"), false, 0, None, None),
            ("redis+unix:///tmp/a%20b?db=3", unix("/tmp/a b"), false, 3, None, None),
            ("redis+unix://:pw@/tmp/s", unix("/tmp/s"), false, 0, None, Some("pw")),
            ("valkey://h:7000/3", node("h", 7000), false, 3, None, None),
            ("VALKEYS://u:pw@h", node("h", 6379), true, 0, Some("u"), Some("pw")),
            ("valkey+unix:///run/v.sock?db=2", unix("/run/v.sock"), false, 2, None, None),
        ];
        for (raw, servers, tls, db, user, password) in rows {
            let url = parsed(raw);
            assert_eq!((&url.servers, url.tls, url.db), (&servers, tls, db), "{raw}");
            assert_eq!((url.user.as_deref(), url.password.as_deref()), (user, password), "{raw}");
            assert!(password.is_none_or(|pw| !format!("{url:?}").contains(pw)), "{url:?}");
        }
        assert_eq!(parsed("redis://bob:p%40ss@h/1").shown(), "redis://<redacted>@h/1");
        assert!(RedisUrl::is_url("redis://h") && RedisUrl::is_url("mongodb://h") && !RedisUrl::is_url("/tmp/a.state"));
    }

    #[test]
    fn sentinel_urls_name_the_sentinels_the_master_and_the_data_nodes_login() {
        let sentinel = |hosts: &[(&str, u16)], master: &str| Servers::Sentinel {
            sentinels: hosts.iter().map(|(host, port)| tcp(host, *port)).collect(),
            master: master.into(),
        };
        let rows = [
            ("redis+sentinel://s1/main", sentinel(&[("s1", 26379)], "main"), false, 0, None, None),
            (
                "redis+sentinel://s1:5000,S2,[::1]:7/main/3",
                sentinel(&[("s1", 5000), ("s2", 26379), ("::1", 7)], "main"),
                false,
                3,
                None,
                None,
            ),
            ("rediss+sentinel://:pw@10.0.0.1/m/", sentinel(&[("10.0.0.1", 26379)], "m"), true, 0, None, Some("pw")),
            (
                "redis+sentinel://bob:p%40ss@a,b/my%20master",
                sentinel(&[("a", 26379), ("b", 26379)], "my master"),
                false,
                0,
                Some("bob"),
                Some("p@ss"),
            ),
            ("valkey+sentinel://s/v/1", sentinel(&[("s", 26379)], "v"), false, 1, None, None),
            ("VALKEYS+SENTINEL://s:1/v", sentinel(&[("s", 1)], "v"), true, 0, None, None),
        ];
        for (raw, servers, tls, db, user, password) in rows {
            let url = parsed(raw);
            assert_eq!((&url.servers, url.tls, url.db), (&servers, tls, db), "{raw}");
            assert_eq!((url.user.as_deref(), url.password.as_deref()), (user, password), "{raw}");
            assert!(password.is_none_or(|pw| !format!("{url:?}").contains(pw) && !url.shown().contains(pw)), "{url:?}");
        }
        assert_eq!(parsed("redis+sentinel://bob:p%40ss@a,b:1/m").shown(), "redis+sentinel://<redacted>@a,b:1/m");
    }

    #[test]
    fn bad_urls_say_why_and_never_show_the_password() {
        let rows = [
            ("mongodb://h", "`mongodb://` is not a state store"),
            ("redis://", "it has no host"),
            ("redis://:6379", "it has no host"),
            ("redis://h:0", "port `0` is not a number from 1 to 65535"),
            ("redis://h:99999", "the port is not a number from 1 to 65535"),
            ("redis://h:+1", "the port is not"),
            ("redis://h/x", "the path `/x` is not a database number"),
            ("redis://h/1/2", "the path `/1/2`"),
            ("redis://h?db=1", "a query"),
            ("redis://h#insecure", "a fragment"),
            ("redis://h h", "is not a host name"),
            ("redis://h<", "is not a host name"),
            ("redis://[::1", "the IPv6 address"),
            ("redis://[nope]", "the IPv6 address"),
            ("redis://0.0.0.0", "where a server listens"),
            ("redis://[::]:1", "where a server listens"),
            ("redis://bob@h", "a user needs a password"),
            ("redis://bob:@h", "a user needs a password"),
            ("valkey://", "it has no host"),
            ("redis+unix://h/tmp/s", "names no host"),
            ("redis+unix://", "names no socket"),
            ("redis+unix:///tmp/s?pass=x", "the only query it takes is ?db=N"),
            ("redis+unix:///tmp/s?db=x", "`x` is not a database number"),
            ("valkey+unix://h/tmp/s", "names no host"),
            ("redis+sentinel://", "it names no Sentinel"),
            ("redis+sentinel:///m", "it names no Sentinel"),
            ("redis+sentinel://a,,b/m", "it names no Sentinel"),
            ("redis+sentinel://a,/m", "it names no Sentinel"),
            ("redis+sentinel://s", "it names no master"),
            ("redis+sentinel://s/", "it names no master"),
            ("redis+sentinel://s//1", "it names no master"),
            ("redis+sentinel://s:0/m", "port `0` is not a number"),
            ("redis+sentinel://s:99999/m", "the port is not a number"),
            ("redis+sentinel://s:x/m", "the port is not a number"),
            ("redis+sentinel://s h/m", "is not a host name"),
            ("redis+sentinel://0.0.0.0/m", "where a server listens"),
            ("redis+sentinel://[::1/m", "the IPv6 address"),
            ("redis+sentinel://s/m/x", "`x` is not a database number"),
            ("redis+sentinel://s/m/1/2", "`1/2` is not a database number"),
            ("redis+sentinel://s/m?db=1", "a query"),
            ("redis+sentinel://s/m#x", "a fragment"),
            ("redis+sentinel://bob@s/m", "a user needs a password"),
            ("redis+sentinel://bob:@s/m", "a user needs a password"),
            ("redis+sentinel://@s/m", "a user needs a password"),
            ("rediss+sentinel://", "it names no Sentinel"),
        ];
        for (raw, why) in rows {
            let Err(e) = RedisUrl::parse(raw) else { panic!("{raw} is accepted") };
            assert!(e.contains(why), "{raw}: {e:?} should say {why:?}");
        }
        for raw in [
            "redis://bob:hunter2@",
            "redis://:hunter2@h:0",
            "rediss://u:hunter2@h/x",
            "redis+sentinel://u:hunter2@s:0/m",
            "redis+sentinel://:hunter2@s/m/x",
            "rediss+sentinel://:hunter2@/m",
            "redis+sentinel://:hunter2@s",
        ] {
            let e = RedisUrl::parse(raw).err().unwrap_or_default();
            assert!(!e.is_empty() && !e.contains("hunter2"), "{raw}: {e}");
        }
    }

    #[test]
    fn addresses_read_as_host_and_port() {
        assert_eq!(tcp("h", 1).to_string(), "h:1");
        assert_eq!(tcp("::1", 7000).to_string(), "[::1]:7000");
        assert_eq!(Addr::Unix("/run/r.sock".into()).to_string(), "/run/r.sock");
    }
}

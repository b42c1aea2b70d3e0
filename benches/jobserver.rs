//! The job server of the benchmarks and of the guide's recipes, on 127.0.0.1
//! only: keep-alive HTTP/1.1, one thread per connection, answers from prebuilt
//! bytes so that it is never the bottleneck (`wrk -t1 -c1` measures its
//! one-connection limit).
//!
//!     cargo run --example jobserver -- [PORT] [--unix PATH]
//!
//! PORT is 8080 unless given, the port every page of docs/guide/ uses; `0`
//! takes any free port (benches/bench.py and tests/windows.sh do). The first
//! line on stdout is `listening on 127.0.0.1:PORT`. With `--unix PATH` it also
//! serves the same routes on a Unix socket at PATH (for `poll --unix-socket`,
//! as docs/guide/ci.md shows).
//!
//! Routes that count their polls count from the start, or from the last
//! `GET /reset`, which starts every count again (the job, the waits, the
//! services, the job APIs' numbers) and ends an outage.
//!
//! Routes:
//!   GET /job          {"status":"pending","n":N} until N reaches the target, then {"status":"done","n":N}
//!   GET /reset?n=K    set the target to K polls (default 1), and start every count again
//!   GET /ok           a fixed small JSON body
//!   GET /status       {"status":"green"}: an API's status endpoint
//!   GET /stats        {"connections":C,"requests":R,"refused":F}
//!   GET /outage       from now until the next /reset, every other route answers 503 (an API that is down)
//!   GET /busy         503 + Retry-After: 1 to the first poll after a /reset, then as /job
//!   GET /hang         answers only after 60 s (a request in flight, for the signal benchmark)
//!   GET /healthz      {"status":"ok","version":"1.4.2"}: a service that is up
//!   GET /svc/NAME/health[?up=S][&first=CODES]
//!                     a service that is starting: for S seconds after the first request to this URL
//!                     the connection is reset before any reply (as Docker's port proxy does while the
//!                     container starts); then the statuses CODES in turn (e.g. 503,503 or 200,503),
//!                     then 200 {"service":"NAME","status":"ok"} for good
//!   GET /reports/N    a report behind a rate-limited API: 200 {"state":"running"} with RateLimit-Remaining: 0
//!                     and RateLimit-Reset: 2, then 429 + Retry-After: 1, then 200 {"state":"ready",...}
//!   POST /app/installations/ID/access_tokens[?ttl=S]
//!                     a new token, as GitHub's API makes an App installation token:
//!                     201 {"token":"ghs_...","expires_at":"RFC 3339"}, valid for S seconds (default:
//!                     $JOBSERVER_TOKEN_TTL, else 3600)
//!   GET /private/job  as /job, but only with `Authorization: Bearer T` for a token made above
//!                     and not expired; 401 otherwise (counted in /stats as "refused")
//!   GET /containers/db/json   Docker's container inspect: State.Health.Status "starting" until the
//!                     /job counter reaches its target, then "healthy" (/containers/bad/json: "unhealthy")
//!   GET /gh/repos/OWNER/REPO/actions/runs/ID
//!                     a GitHub Actions workflow run, as GitHub's REST API answers it: an 11 KiB
//!                     body, "status":"queued" for the first third of the polls, "in_progress" up
//!                     to the last, "completed" with "conclusion":"success" (or the `conclusion=`
//!                     of the reset) from poll N on; a weak `ETag` that changes only when the body
//!                     does, `304 Not Modified` to an `If-None-Match` that names it, and
//!                     `X-RateLimit-Remaining` (of 1,000, a GITHUB_TOKEN's hourly budget) that only
//!                     200s spend. Every request to it counts as a poll, 304s included.
//!   GET /gh/reset?after=N[&conclusion=C][&reset=S]
//!                     a new run that completes at poll N, a full quota again; with `reset=S` the
//!                     replies also carry `X-RateLimit-Reset` (now + S), as GitHub's do
//!   GET /gh/stats     {"requests":R,"ok":O,"not_modified":M,"bytes":B,"quota_spent":Q,"changes":C}:
//!                     B counts every byte written for the run's replies, status line and headers
//!                     included; C is how many times the body changed so far
//!   The collections of docs/guide/pages.md and of the pages benchmark (`--paginate`):
//!   GET /gh/repos/OWNER/REPO/commits/SHA/check-runs?per_page=100[&page=N]
//!                     a commit's 250 check runs, as GitHub's REST API pages them: 100 a page, three pages
//!                     with `total_count` and GitHub's `Link` (prev, next, last, first; absolute URLs), a
//!                     weak `ETag` per page and `304 Not Modified` to an `If-None-Match` that names it, and
//!                     `X-RateLimit-Remaining` that only 200s spend. Every run is completed and successful
//!                     but run 201 (page 3): queued for the first third of the walks, in progress up to the
//!                     last, completed with the `conclusion=` of the reset (failure unless given) from walk
//!                     N on. A walk is counted at each request to page 1.
//!   GET /gh/checks/reset?after=N[&conclusion=C]
//!                     the check runs again from their start, run 201 completing at walk N (default 3)
//!   GET /gh/checks/stats {"requests":R,"walks":W,"ok":O,"not_modified":M,"bytes":B,"quota_spent":Q,"changes":C}:
//!                     as /gh/stats, for the check runs' pages; C counts the times a page changed so far
//!   GET /subscriptions/s1/resourceGroups/ci/providers/Microsoft.Compute/virtualMachines?api-version=V[&$skiptoken=2]
//!                     Azure's list of a group's VMs in two pages, the first with `nextLink` (absolute), the
//!                     second's vm-3 "Creating" until the third walk (a request to page 1), then "Succeeded"
//!   Azure Resource Manager's shapes (docs/guide/submit.md), each operation done after two status polls:
//!   PUT  /subscriptions/s1/resourceGroups/rg/providers/Microsoft.Resources/deployments/NAME
//!                     201 Accepted + Azure-AsyncOperation (.../operations/NAME: {"status":"Running"},
//!                     then "Succeeded"); a GET of the deployment then has its outputs
//!   PUT  .../providers/Microsoft.Storage/storageAccounts/NAME
//!                     201 {"properties":{"provisioningState":"Creating"}} and no header: body polling
//!   DELETE .../providers/Microsoft.Storage/storageAccounts/NAME
//!                     202 + Location (.../operationResults/NAME: 202, then 204)
//!   The other job APIs of docs/guide/submit.md, each operation done at its second status poll:
//!   POST /azure/deployments   202 + Operation-Location /azure/operations/N + Retry-After: 1
//!   POST /v1/builds   an AIP-151 operation, /v1/operations/build-N ("broken" in the body: an error)
//!   POST /jobs        201 {"id":N}; GET /jobs/N {"id":N,"status":"running"}, then "done" with an
//!                     artifact; GET /jobs/broken ends "failed" with an error
//!   POST /deployments 202 + Operation-Location /deployments/ops/N, the same N for the same Idempotency-Key
//!   The waits of docs/guide/waits.md, each counted by its own path:
//!   GET  /registry/pkg/NAME/VERSION  404 for the first two polls, then the version's JSON (a package published)
//!   HEAD /v2/NAME/manifests/TAG      404 for the first two, then 200 with Docker-Content-Digest (an image pushed)
//!   GET  /envs/NAME   {"status":"deleting"} twice, then 404 (torn down); /envs/broken ends "delete_failed"
//!   GET  /blobs/NAME  202 with x-ms-copy-status: pending and x-ms-copy-progress twice, then 200 "success"
//!   GET  /azure/rg/GROUP/vms/NAME  404 ResourceNotFound twice, then the VM; in GROUP `gone`, 404 ResourceGroupNotFound
//!   POST /dynamodb    DescribeTable: 400 ResourceNotFoundException twice, then the table ACTIVE
//!   The streams of docs/guide/watch.md and of the watch benchmark, around one rollout that is done
//!   at a moment set by /rollout/reset (pending until then, for good if never set):
//!   GET  /rollout/reset?after=MS  the rollout is done MS milliseconds from now, and its counts start again
//!   GET  /rollout     {"status":"pending"} or {"status":"done"}: the rollout, asked
//!   GET  /rollout/events          Server-Sent Events: `id: 1` pending at once, `id: 2` done when it is,
//!                     comments as heartbeats
//!   GET  /rollout/watch           a Kubernetes-style watch of the rollout's job: NDJSON, one
//!                     {"type":"ADDED"|"MODIFIED","object":...} a line, `status.succeeded` 1 when done
//!   GET  /v1/kv/rollout[?index=N&wait=Ns]  a Consul blocking query of the rollout's key: at once with
//!                     X-Consul-Index 1 (pending), or held until the rollout is done (X-Consul-Index 2) or
//!                     the wait passes; the value base64, as Consul's API gives it
//!   GET  /chat        a chat model's SSE reply: `event: delta` pieces of text, then `event: complete`
//!   GET  /rollout/stats           {"requests":R,"done_at_ns":T,"sent_ns":S}: the requests to the
//!                     routes above, when the rollout was due and when its done event was written
//!                     (nanoseconds since the Unix epoch; null until then)
//!   The fleet of `benches/bench.py --storm` (many polls sharing one `--state`), counted apart:
//!   GET  /storm       the fleet's API: 200 {} while healthy; in a brownout every other request to
//!                     it (one counter for all clients, alternating) is a 503; under a limit the
//!                     first N requests of each wall-clock second (a fixed window) are 200 {} and
//!                     the rest a bare 429 (no Retry-After, no rate-limit headers)
//!   GET  /storm/reset[?mode=healthy|brownout|limit][&limit=N]
//!                     the mode from now on (unchanged when not given; limit N is 10 unless given),
//!                     and /storm's counts start again
//!   GET  /storm/stats {"mode":M,"seconds":S,"requests":R,"ok":O,"unavailable":U,"limited":L}: the
//!                     requests to /storm since its last reset (S seconds ago), its 200s, 503s and 429s
//!   anything else     404

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
#[cfg(unix)]
use std::os::unix::net::UnixListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

#[derive(Default)]
struct Counters {
    polls: AtomicU64,
    target: AtomicU64,
    connections: AtomicU64,
    requests: AtomicU64,
    refused: AtomicU64,
    /// Tokens made by the access_tokens route, with when they expire.
    tokens: Mutex<Vec<(String, SystemTime)>>,
    /// ARM operations by resource name: how many times each was polled (and, for
    /// the other job APIs, which build is broken and which key started which operation).
    arm: Mutex<HashMap<String, u64>>,
    /// The job APIs' next operation number, less 7.
    next_id: AtomicU64,
    /// The workflow run of the /gh/ routes.
    run: Mutex<Run>,
    /// A commit's check runs, paged, of the /gh/ routes.
    checks: Mutex<Checks>,
    /// The waits' routes: how many times each path was asked for.
    waits: Mutex<HashMap<String, u64>>,
    /// The services that are starting (`/svc/`), by URL.
    services: Mutex<HashMap<String, Service>>,
    /// `/outage` until the next `/reset`: every other route answers 503.
    outage: AtomicBool,
    /// The rollout of the stream routes.
    rollout: Mutex<Rollout>,
    /// The fleet's API of `/storm`.
    storm: Mutex<Storm>,
}

/// What `/storm` does: answer every request, fail every other one with 503, or allow
/// a number of requests per wall-clock second and refuse the rest with a bare 429.
#[derive(Default, Clone, Copy)]
enum StormMode {
    #[default]
    Healthy,
    Brownout,
    Limit,
}

/// `/storm`'s mode and its counts since the last `/storm/reset`.
#[derive(Default)]
struct Storm {
    mode: StormMode,
    /// Requests allowed per wall-clock second under `Limit`.
    limit: u64,
    /// When the counts started (`None`: never reset, zero seconds).
    since: Option<Instant>,
    requests: u64,
    ok: u64,
    unavailable: u64,
    limited: u64,
    /// Under `Limit`: the wall-clock second (since the Unix epoch) of the window, and its requests so far.
    window: (u64, u64),
}

/// The rollout the stream routes watch: when it is done (`None`: not yet set), the
/// requests to those routes, and when its done event was last written.
#[derive(Default)]
struct Rollout {
    done_at: Option<(Instant, SystemTime)>,
    requests: u64,
    sent: Option<SystemTime>,
}

/// How often a held stream sends a heartbeat (an SSE comment, a blank NDJSON line).
const HEARTBEAT: Duration = Duration::from_secs(15);

/// How long a held stream is kept at most.
const HOLD_MAX: Duration = Duration::from_secs(600);

/// The port every page of the guide uses.
const GUIDE_PORT: u16 = 8080;

/// A service that is starting (`/svc/NAME/health`): when it was first asked, and how many replies it gave.
struct Service {
    first: Instant,
    replies: usize,
}

/// The answer to one request: a reply (status, extra header lines, body), or a
/// connection reset before any reply.
enum Answer {
    Reply(&'static str, String, String),
    Reset,
}

/// `GET /svc/NAME/health[?up=S][&first=CODES]`: reset for S seconds after its
/// first request, then the statuses CODES in turn, then 200 for good; `None`
/// for another route.
fn service(method: &str, target: &str, counters: &Counters) -> Option<Answer> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let name = match (method, path.trim_start_matches('/').split('/').collect::<Vec<_>>().as_slice()) {
        ("GET", ["svc", name, "health"]) => name.to_string(),
        _ => return None,
    };
    let value = |key: &str| query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='));
    let up = value("up").and_then(|s| s.parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0).unwrap_or(0.0);
    let first: Vec<&str> = value("first").map(|codes| codes.split(',').collect()).unwrap_or_default();
    let mut services = lock(&counters.services);
    let service = services.entry(target.to_string()).or_insert_with(|| Service { first: Instant::now(), replies: 0 });
    if service.first.elapsed() < Duration::from_secs_f64(up) {
        return Some(Answer::Reset);
    }
    service.replies += 1;
    let ok = format!(r#"{{"service":"{name}","status":"ok"}}"#);
    Some(match first.get(service.replies - 1).map(|code| code.trim()) {
        None | Some("200") => Answer::Reply("200 OK", String::new(), ok),
        Some(code) => {
            let status = match code {
                "404" => "404 Not Found",
                "429" => "429 Too Many Requests",
                "500" => "500 Internal Server Error",
                "502" => "502 Bad Gateway",
                "504" => "504 Gateway Timeout",
                _ => "503 Service Unavailable",
            };
            Answer::Reply(status, String::new(), format!(r#"{{"service":"{name}","status":"starting"}}"#))
        }
    })
}

/// The waits of docs/guide/waits.md: (status, extra header lines, body), or `None` for another route.
/// Each path turns at its third request.
fn waits(method: &str, target: &str, counters: &Counters) -> Option<(&'static str, String, String)> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let asked = || {
        let mut counts = lock(&counters.waits);
        let n = counts.entry(path.to_string()).or_insert(0);
        *n += 1;
        *n
    };
    let not_found = || ("404 Not Found", String::new(), r#"{"error":"not found"}"#.to_string());
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match (method, segments.as_slice()) {
        ("GET", ["registry", "pkg", name, version]) => Some(match asked() {
            ..=2 => not_found(),
            _ => (
                "200 OK",
                String::new(),
                format!(
                    r#"{{"name":"{name}","version":"{version}","dist":{{"tarball":"/tarballs/{name}-{version}.tgz"}}}}"#
                ),
            ),
        }),
        ("HEAD", ["v2", _, "manifests", _]) => Some(match asked() {
            ..=2 => not_found(),
            _ => ("200 OK", "Docker-Content-Digest: sha256:4f2c9b1e\r\n".to_string(), "{}".to_string()),
        }),
        ("GET", ["envs", name]) => Some(match (asked(), *name) {
            (..=2, _) => ("200 OK", String::new(), format!(r#"{{"name":"{name}","status":"deleting"}}"#)),
            (_, "broken") => ("200 OK", String::new(), r#"{"name":"broken","status":"delete_failed"}"#.to_string()),
            _ => not_found(),
        }),
        ("GET", ["blobs", _]) => Some(match asked() {
            n @ ..=2 => {
                let headers = format!("x-ms-copy-status: pending\r\nx-ms-copy-progress: {}/100\r\n", n * 40);
                ("202 Accepted", headers, String::new())
            }
            _ => ("200 OK", "x-ms-copy-status: success\r\nx-ms-copy-progress: 100/100\r\n".to_string(), String::new()),
        }),
        ("GET", ["healthz"]) => Some(("200 OK", String::new(), r#"{"status":"ok","version":"1.4.2"}"#.to_string())),
        // Azure: a resource not there yet (404 ResourceNotFound) and one whose group is gone (ResourceGroupNotFound).
        ("GET", ["azure", "rg", group, "vms", name]) => {
            let error = |code: &str| format!(r#"{{"error":{{"code":"{code}","message":"{name} in {group}"}}}}"#);
            Some(match (*group, asked()) {
                ("gone", _) => ("404 Not Found", String::new(), error("ResourceGroupNotFound")),
                (_, ..=2) => ("404 Not Found", String::new(), error("ResourceNotFound")),
                _ => ("200 OK", String::new(), format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Succeeded"}}}}"#)),
            })
        }
        // DynamoDB's DescribeTable of a table being created: 400 ResourceNotFoundException, then ACTIVE.
        ("POST", ["dynamodb"]) => Some(match asked() {
            ..=2 => (
                "400 Bad Request",
                String::new(),
                r#"{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}"#.to_string(),
            ),
            _ => ("200 OK", String::new(), r#"{"Table":{"TableName":"jobs","TableStatus":"ACTIVE"}}"#.to_string()),
        }),
        ("GET", ["reports", id]) => Some(match asked() {
            1 => (
                "200 OK",
                "RateLimit-Limit: 10\r\nRateLimit-Remaining: 0\r\nRateLimit-Reset: 2\r\n".to_string(),
                format!(r#"{{"id":{id},"state":"running","progress":"40%"}}"#),
            ),
            2 => ("429 Too Many Requests", "Retry-After: 1\r\n".to_string(), r#"{"error":"slow down"}"#.to_string()),
            _ => ("200 OK", String::new(), format!(r#"{{"id":{id},"state":"ready","progress":"100%","rows":1200}}"#)),
        }),
        _ => None,
    }
}

/// The other job APIs of docs/guide/submit.md: `/azure/deployments`, Google's
/// AIP-151 `/v1/builds`, a plain `/jobs` (201 with an id) and `/deployments`
/// (by idempotency key); each operation is done at its second status poll.
fn jobs(
    method: &str,
    target: &str,
    sent: &str,
    key: Option<&str>,
    counters: &Counters,
) -> Option<(&'static str, String, String)> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let mut polls = counters.arm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let next = || counters.next_id.fetch_add(1, Ordering::Relaxed) + 7;
    // One more status poll of `name`; whether its operation is done now.
    let poll = |polls: &mut HashMap<String, u64>, name: &str| {
        let n = polls.entry(name.to_string()).or_insert(0);
        *n += 1;
        *n >= ARM_POLLS
    };
    let json = |status, body: String| Some((status, String::new(), body));
    match (method, path) {
        // The first poll after a /reset is turned away for a second, then it is /job's.
        ("GET", "/busy") => {
            let n = counters.polls.fetch_add(1, Ordering::Relaxed) + 1;
            if n == 1 {
                return Some(("503 Service Unavailable", "Retry-After: 1\r\n".into(), r#"{"status":"busy"}"#.into()));
            }
            let status = if n >= counters.target.load(Ordering::Relaxed) { "done" } else { "pending" };
            json("200 OK", format!(r#"{{"status":"{status}","n":{n}}}"#))
        }
        ("POST", "/azure/deployments") => {
            let header = format!("Operation-Location: /azure/operations/{}\r\nRetry-After: 1\r\n", next());
            Some(("202 Accepted", header, String::new()))
        }
        ("GET", p) if p.starts_with("/azure/operations/") => {
            let id = &p[18..];
            let (status, done) = if poll(&mut polls, p) { ("Succeeded", 100) } else { ("Running", 50) };
            json("200 OK", format!(r#"{{"id": "{id}", "status": "{status}", "percentComplete": {done}}}"#))
        }
        ("POST", "/v1/builds") => {
            let name = format!("operations/build-{}", next());
            if sent.contains("broken") {
                polls.insert(format!("broken-{name}"), 0);
            }
            json("200 OK", format!(r#"{{"name": "{name}", "done": false}}"#))
        }
        ("GET", p) if p.starts_with("/v1/operations/") => {
            let name = &p[4..];
            let broken = polls.contains_key(&format!("broken-{name}"));
            let body = match (poll(&mut polls, p), broken) {
                (false, _) => format!(r#"{{"name": "{name}", "done": false}}"#),
                (true, false) => {
                    let build = name.trim_start_matches("operations/");
                    format!(
                        r#"{{"name": "{name}", "done": true, "response": {{"artifact": "gs://builds/{build}.tar.gz"}}}}"#
                    )
                }
                (true, true) => format!(
                    r#"{{"name": "{name}", "done": true, "error": {{"code": 13, "message": "test suite failed"}}}}"#
                ),
            };
            json("200 OK", body)
        }
        ("POST", "/jobs") => json("201 Created", format!(r#"{{"id": {}}}"#, next())),
        ("GET", p) if p.starts_with("/jobs/") => {
            let id = &p[6..];
            // A number as a number, a name (`broken`) as a string.
            let shown = if id.parse::<u64>().is_ok() { id.to_string() } else { format!("\"{id}\"") };
            let body = match (poll(&mut polls, p), id) {
                (false, _) => format!(r#"{{"id":{shown},"status":"running"}}"#),
                (true, "broken") => format!(r#"{{"id":{shown},"status":"failed","error":"compiler exploded"}}"#),
                (true, _) => {
                    format!(
                        r#"{{"id":{shown},"status":"done","artifact":"https://cdn.example.com/build-{id}.tar.gz"}}"#
                    )
                }
            };
            json("200 OK", body)
        }
        ("POST", "/deployments") => {
            // The same key names the operation it started first.
            let id = match key.map(|key| format!("key-{key}")) {
                Some(known) if polls.contains_key(&known) => polls.get(&known).copied().unwrap_or_default(),
                Some(known) => {
                    let id = next();
                    polls.insert(known, id);
                    id
                }
                None => next(),
            };
            Some(("202 Accepted", format!("Operation-Location: /deployments/ops/{id}\r\n"), String::new()))
        }
        ("GET", p) if p.starts_with("/deployments/ops/") => {
            let id = &p[17..];
            json("200 OK", format!(r#"{{"status": "Succeeded", "result": {{"id": "dep-{id}"}}}}"#))
        }
        _ => None,
    }
}

/// During an outage, every route but `/outage`, `/reset` and the statistics answers 503.
fn outage(target: &str, counters: &Counters) -> Option<Answer> {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    if path == "/outage" {
        counters.outage.store(true, Ordering::Relaxed);
        return Some(Answer::Reply("200 OK", String::new(), r#"{"outage":true}"#.to_string()));
    }
    let spared = ["/reset", "/stats", "/gh/stats", "/gh/checks/stats"].contains(&path);
    (counters.outage.load(Ordering::Relaxed) && !spared)
        .then(|| Answer::Reply("503 Service Unavailable", String::new(), r#"{"error":"outage"}"#.to_string()))
}

/// The fleet's routes (`/storm`, `/storm/reset`, `/storm/stats`): (status, extra header lines, body),
/// or `None` for another route.
fn storm(method: &str, target: &str, counters: &Counters) -> Option<(&'static str, String, String)> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let value = |key: &str| query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='));
    let json = |status, body: &str| Some((status, String::new(), body.to_string()));
    let mut storm = lock(&counters.storm);
    match (method, path) {
        // The fleet's API: every request is counted, then answered as the mode says.
        ("GET", "/storm") => {
            storm.requests += 1;
            let refused = match storm.mode {
                StormMode::Healthy => false,
                // One counter for the whole fleet: the 2nd, 4th, 6th ... request since the reset fails.
                StormMode::Brownout => storm.requests.is_multiple_of(2),
                // A fixed window per wall-clock second, as a simple server-side limiter keeps it.
                StormMode::Limit => {
                    let second = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                    if storm.window.0 != second {
                        storm.window = (second, 0);
                    }
                    storm.window.1 += 1;
                    storm.window.1 > storm.limit
                }
            };
            match (refused, storm.mode) {
                (false, _) => {
                    storm.ok += 1;
                    json("200 OK", "{}")
                }
                (true, StormMode::Limit) => {
                    storm.limited += 1;
                    json("429 Too Many Requests", r#"{"error":"too many requests"}"#)
                }
                (true, _) => {
                    storm.unavailable += 1;
                    json("503 Service Unavailable", r#"{"error":"brownout"}"#)
                }
            }
        }
        // A new mode (or the same), and the counts start again from now.
        ("GET", "/storm/reset") => {
            let mode = match value("mode") {
                None => storm.mode,
                Some("healthy") => StormMode::Healthy,
                Some("brownout") => StormMode::Brownout,
                Some("limit") => StormMode::Limit,
                Some(_) => return json("400 Bad Request", r#"{"error":"mode is healthy, brownout or limit"}"#),
            };
            let limit = value("limit").and_then(|n| n.parse().ok()).unwrap_or(10);
            *storm = Storm { mode, limit, since: Some(Instant::now()), ..Storm::default() };
            json("200 OK", &format!(r#"{{"limit":{limit}}}"#))
        }
        // The counts since the last reset, and how long ago it was.
        ("GET", "/storm/stats") => {
            let mode = match storm.mode {
                StormMode::Healthy => "healthy",
                StormMode::Brownout => "brownout",
                StormMode::Limit => "limit",
            };
            let seconds = storm.since.map_or(0.0, |at| at.elapsed().as_secs_f64());
            json(
                "200 OK",
                &format!(
                    r#"{{"mode":"{mode}","seconds":{seconds:.6},"requests":{},"ok":{},"unavailable":{},"limited":{}}}"#,
                    storm.requests, storm.ok, storm.unavailable, storm.limited
                ),
            )
        }
        _ => None,
    }
}

/// Status polls after which an ARM operation is done.
const ARM_POLLS: u64 = 2;

/// GitHub's hourly request budget for a workflow's GITHUB_TOKEN.
const QUOTA: u64 = 1000;

/// The GitHub-like workflow run: its three bodies, prebuilt, and what its replies cost.
struct Run {
    after: u64,
    /// (body, ETag) while queued, in progress, completed.
    bodies: [(String, String); 3],
    reset: Option<u64>,
    polls: u64,
    ok: u64,
    not_modified: u64,
    bytes: u64,
}

impl Default for Run {
    fn default() -> Run {
        Run::new(300, "success", None)
    }
}

impl Run {
    fn new(after: u64, conclusion: &str, reset: Option<u64>) -> Run {
        let body = |status: &str, conclusion: &str, updated: &str| {
            let body = workflow_run(status, conclusion, updated);
            let etag = format!("W/\"{:016x}\"", fnv(body.as_bytes()));
            (body, etag)
        };
        let conclusion = format!("\"{conclusion}\"");
        Run {
            after: after.max(1),
            bodies: [
                body("queued", "null", "2026-03-02T09:14:03Z"),
                body("in_progress", "null", "2026-03-02T09:14:21Z"),
                body("completed", &conclusion, "2026-03-02T09:31:47Z"),
            ],
            reset,
            polls: 0,
            ok: 0,
            not_modified: 0,
            bytes: 0,
        }
    }

    /// The phase of poll `n` (from 1): queued, in progress, completed.
    fn phase(&self, n: u64) -> usize {
        if n >= self.after {
            2
        } else if n <= self.after / 3 {
            0
        } else {
            1
        }
    }

    /// The reply to one poll, status line and headers included.
    fn answer(&mut self, if_none_match: Option<&str>) -> Vec<u8> {
        self.polls += 1;
        let (body, etag) = &self.bodies[self.phase(self.polls)];
        // A weak comparison, as RFC 9110 asks of If-None-Match: W/ does not matter.
        let strip = |tag: &str| tag.trim().trim_start_matches("W/").to_string();
        let unchanged =
            if_none_match.is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == "*" || strip(tag) == strip(etag)));
        if !unchanged {
            self.ok += 1;
        }
        let remaining = QUOTA.saturating_sub(self.ok);
        let mut head = String::with_capacity(512);
        let date = httpdate::fmt_http_date(SystemTime::now());
        let _ = write!(
            head,
            "{}\r\nDate: {date}\r\nCache-Control: private, max-age=60, s-maxage=60\r\n\
             Vary: Accept, Authorization, Cookie, X-GitHub-OTP\r\nETag: {etag}\r\n\
             X-GitHub-Media-Type: github.v3; format=json\r\nX-RateLimit-Limit: {QUOTA}\r\n\
             X-RateLimit-Remaining: {remaining}\r\nX-RateLimit-Used: {}\r\nX-RateLimit-Resource: core\r\n",
            if unchanged { "HTTP/1.1 304 Not Modified" } else { "HTTP/1.1 200 OK" },
            self.ok,
        );
        if let Some(seconds) = self.reset {
            let at = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) + seconds;
            let _ = write!(head, "X-RateLimit-Reset: {at}\r\n");
        }
        let mut reply = head.into_bytes();
        if unchanged {
            self.not_modified += 1;
            reply.extend_from_slice(b"\r\n");
        } else {
            let _ = write!(
                reply,
                "Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
        self.bytes += reply.len() as u64;
        reply
    }

    fn stats(&self) -> String {
        let changes = self.phase(self.polls.max(1)) as u64;
        format!(
            r#"{{"requests":{},"ok":{},"not_modified":{},"bytes":{},"quota_spent":{},"changes":{changes}}}"#,
            self.polls,
            self.ok,
            self.not_modified,
            self.bytes,
            self.ok.min(QUOTA),
        )
    }
}

/// The origin of the TCP listener, `http://127.0.0.1:PORT`, for the absolute URLs of the collections' pages.
static ORIGIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The check runs of one commit, and how many of them each page of 100 holds.
const CHECK_RUNS: u64 = 250;
const CHECKS_PER_PAGE: u64 = 100;

/// A commit's check runs as GitHub pages them: three pages, prebuilt for each phase of run 201
/// (pages 1 and 2 never change), and what their replies cost.
struct Checks {
    after: u64,
    /// For each page, (body, ETag) while run 201 is queued, in progress, completed.
    pages: Vec<[(String, String); 3]>,
    walks: u64,
    requests: u64,
    ok: u64,
    not_modified: u64,
    bytes: u64,
}

impl Default for Checks {
    fn default() -> Checks {
        Checks::new(3, "failure")
    }
}

impl Checks {
    fn new(after: u64, conclusion: &str) -> Checks {
        let pages = (1..=CHECK_RUNS.div_ceil(CHECKS_PER_PAGE))
            .map(|page| {
                let body = |phase: usize| {
                    let body = check_runs(page, phase, conclusion);
                    let etag = format!("W/\"{:016x}\"", fnv(body.as_bytes()));
                    (body, etag)
                };
                [body(0), body(1), body(2)]
            })
            .collect();
        Checks { after: after.max(1), pages, walks: 0, requests: 0, ok: 0, not_modified: 0, bytes: 0 }
    }

    /// Run 201's phase at walk `n` (from 1): queued, in progress, completed.
    fn phase(&self, n: u64) -> usize {
        if n >= self.after {
            2
        } else if n <= self.after / 3 {
            0
        } else {
            1
        }
    }

    /// The reply to a request for page `page` (from 1), status line and headers included.
    fn answer(&mut self, page: u64, if_none_match: Option<&str>) -> Vec<u8> {
        self.requests += 1;
        if page == 1 {
            self.walks += 1;
        }
        let Some(bodies) = self.pages.get(page as usize - 1) else {
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec();
        };
        let (body, etag) = &bodies[self.phase(self.walks.max(1))];
        let strip = |tag: &str| tag.trim().trim_start_matches("W/").to_string();
        let unchanged =
            if_none_match.is_some_and(|tags| tags.split(',').any(|tag| tag.trim() == "*" || strip(tag) == strip(etag)));
        if !unchanged {
            self.ok += 1;
        }
        let remaining = QUOTA.saturating_sub(self.ok);
        let mut reply = String::with_capacity(1024);
        let _ = write!(
            reply,
            "{}\r\nDate: {}\r\nCache-Control: private, max-age=60, s-maxage=60\r\nETag: {etag}\r\n\
             X-RateLimit-Limit: {QUOTA}\r\nX-RateLimit-Remaining: {remaining}\r\nX-RateLimit-Used: {}\r\n\
             X-RateLimit-Resource: core\r\n",
            if unchanged { "HTTP/1.1 304 Not Modified" } else { "HTTP/1.1 200 OK" },
            httpdate::fmt_http_date(SystemTime::now()),
            self.ok,
        );
        let mut reply = reply.into_bytes();
        if unchanged {
            self.not_modified += 1;
            reply.extend_from_slice(b"\r\n");
        } else {
            let _ = write!(
                reply,
                "Link: {}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                check_runs_link(page, self.pages.len() as u64),
                body.len()
            );
        }
        self.bytes += reply.len() as u64;
        reply
    }

    fn stats(&self) -> String {
        let changes = self.phase(self.walks.max(1)) as u64;
        format!(
            r#"{{"requests":{},"walks":{},"ok":{},"not_modified":{},"bytes":{},"quota_spent":{},"changes":{changes}}}"#,
            self.requests,
            self.walks,
            self.ok,
            self.not_modified,
            self.bytes,
            self.ok.min(QUOTA),
        )
    }
}

/// The page a check runs URL asks for (`/gh/repos/OWNER/REPO/commits/SHA/check-runs`, `page=N`, 1
/// without one), or `None` for another route.
fn check_runs_page(target: &str) -> Option<u64> {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let parts: Vec<&str> = path.split('/').collect();
    let named = matches!(parts[..], ["", "gh", "repos", _, _, "commits", _, "check-runs"]);
    if !named && !matches!(parts[..], ["", "gh", "repositories", _, "commits", _, "check-runs"]) {
        return None;
    }
    let page = query.split('&').find_map(|pair| pair.strip_prefix("page=")?.parse().ok());
    Some(page.unwrap_or(1).max(1))
}

/// GitHub's `Link` of page `page` of `last`: prev, next, last and first as they apply.
fn check_runs_link(page: u64, last: u64) -> String {
    let origin = ORIGIN.get().map_or("http://127.0.0.1:8080", String::as_str);
    // GitHub names a repository by its id in the links it makes.
    let url = |n: u64| {
        format!("<{origin}/gh/repositories/642115342/commits/9f2c4e1/check-runs?per_page={CHECKS_PER_PAGE}&page={n}>")
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", url(page - 1)));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", url(page + 1)));
        links.push(format!("{}; rel=\"last\"", url(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", url(1)));
    }
    links.join(", ")
}

/// Page `page` of the check runs while run 201 is in `phase` (queued, in progress, completed with `conclusion`).
fn check_runs(page: u64, phase: usize, conclusion: &str) -> String {
    let first = (page - 1) * CHECKS_PER_PAGE + 1;
    let last = (page * CHECKS_PER_PAGE).min(CHECK_RUNS);
    let runs: Vec<String> = (first..=last)
        .map(|id| {
            let (status, conclusion, completed) = match (id, phase) {
                (201, 0) => ("queued", "null".to_string(), "null"),
                (201, 1) => ("in_progress", "null".to_string(), "null"),
                (201, _) => ("completed", format!("\"{conclusion}\""), "\"2026-03-02T09:31:47Z\""),
                _ => ("completed", "\"success\"".to_string(), "\"2026-03-02T09:20:12Z\""),
            };
            let url = format!("https://api.github.com/repos/octo-org/app/check-runs/{}", 28_000_000_000 + id);
            format!(
                r#"{{"id":{},"name":"test ({id})","node_id":"CR_kwDOJvB2Ds8AAAAGhX{id:04x}","head_sha":"9f2c4e1b7a3d5f6e8c0b2a4d6f8e0c2b4a6d8f0e","external_id":"{id:08x}","url":"{url}","html_url":"https://github.com/octo-org/app/runs/{}","details_url":"https://github.com/octo-org/app/actions/runs/30433642/job/{}","status":"{status}","conclusion":{conclusion},"started_at":"2026-03-02T09:14:21Z","completed_at":{completed},"output":{{"title":null,"summary":null,"text":null,"annotations_count":0,"annotations_url":"{url}/annotations"}},"check_suite":{{"id":21524573401}},"app":{{"id":15368,"slug":"github-actions","name":"GitHub Actions"}},"pull_requests":[]}}"#,
                28_000_000_000 + id,
                28_000_000_000 + id,
                28_000_000_000 + id,
            )
        })
        .collect();
    format!(r#"{{"total_count":{CHECK_RUNS},"check_runs":[{}]}}"#, runs.join(","))
}

/// `GET .../resourceGroups/ci/providers/Microsoft.Compute/virtualMachines`: Azure's list of the
/// group's VMs, two pages joined by `nextLink`; vm-3 is created at the third walk. `None` for
/// another route.
fn virtual_machines(method: &str, target: &str, counters: &Counters) -> Option<(&'static str, String, String)> {
    const LIST: &str = "/subscriptions/s1/resourceGroups/ci/providers/Microsoft.Compute/virtualMachines";
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != LIST {
        return None;
    }
    let vm = |name: &str, state: &str| {
        format!(
            r#"{{"name":"{name}","id":"/subscriptions/s1/resourceGroups/ci/providers/Microsoft.Compute/virtualMachines/{name}","location":"westeurope","properties":{{"vmId":"{:08x}","provisioningState":"{state}"}}}}"#,
            fnv(name.as_bytes()) as u32
        )
    };
    let body = if query.contains("$skiptoken=") {
        let walks = lock(&counters.waits).get("vm-walks").copied().unwrap_or(0);
        let state = if walks >= 3 { "Succeeded" } else { "Creating" };
        format!(r#"{{"value":[{}]}}"#, vm("vm-3", state))
    } else {
        *lock(&counters.waits).entry("vm-walks".to_string()).or_insert(0) += 1;
        let origin = ORIGIN.get().map_or("http://127.0.0.1:8080", String::as_str);
        format!(
            r#"{{"value":[{},{}],"nextLink":"{origin}{LIST}?api-version=2024-07-01&$skiptoken=eyJwYWdlIjoyfQ"}}"#,
            vm("vm-1", "Succeeded"),
            vm("vm-2", "Succeeded")
        )
    };
    Some(("200 OK", String::new(), body))
}

/// FNV-1a, for ETags that change exactly when the body does.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// A workflow run object as GitHub's REST API returns it (`GET /repos/{owner}/{repo}/actions/runs/{id}`),
/// with its repository and head repository in full: about 11 KiB.
fn workflow_run(status: &str, conclusion: &str, updated_at: &str) -> String {
    let repo = |id: u64, name: &str| {
        let api = format!("https://api.github.com/repos/octo-org/{name}");
        let mut urls = String::new();
        for (key, path) in REPO_URLS {
            let _ = write!(urls, r#","{key}":"{api}{path}""#);
        }
        format!(
            r#"{{"id":{id},"node_id":"R_kgDOJ{id:x}","name":"{name}","full_name":"octo-org/{name}","private":true,"owner":{owner},"html_url":"https://github.com/octo-org/{name}","description":"Build, test and release of {name}","fork":false,"url":"{api}"{urls}}}"#,
            owner = owner("octo-org", 9_919, "Organization"),
        )
    };
    format!(
        r#"{{"id":30433642,"name":"Release","node_id":"WFR_kwLOJvB2Ds4B0Fpq","head_branch":"main","head_sha":"9f2c4e1b7a3d5f6e8c0b2a4d6f8e0c2b4a6d8f0e","path":".github/workflows/release.yml","display_title":"Release v2.4.0","run_number":562,"event":"push","status":"{status}","conclusion":{conclusion},"workflow_id":159038,"check_suite_id":21524573401,"check_suite_node_id":"CS_kwDOJvB2Ds8AAAAFAvXp2Q","url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642","html_url":"https://github.com/octo-org/app/actions/runs/30433642","pull_requests":[],"created_at":"2026-03-02T09:14:02Z","updated_at":"{updated_at}","actor":{actor},"run_attempt":1,"referenced_workflows":[{{"path":"octo-org/shared/.github/workflows/build.yml@v3","sha":"1d3f5b7c9e0a2c4e6a8c0e2a4c6e8a0c2e4a6c8e","ref":"refs/tags/v3"}}],"run_started_at":"2026-03-02T09:14:02Z","triggering_actor":{actor},"jobs_url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642/jobs","logs_url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642/logs","check_suite_url":"https://api.github.com/repos/octo-org/app/check-suites/21524573401","artifacts_url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642/artifacts","cancel_url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642/cancel","rerun_url":"https://api.github.com/repos/octo-org/app/actions/runs/30433642/rerun","previous_attempt_url":null,"workflow_url":"https://api.github.com/repos/octo-org/app/actions/workflows/159038","head_commit":{{"id":"9f2c4e1b7a3d5f6e8c0b2a4d6f8e0c2b4a6d8f0e","tree_id":"c0e2a4c6e8a0c2e4a6c8e0a2c4e6a8c0e2a4c6e8","message":"Release v2.4.0\n\nBump the version, update the changelog and the lock file.","timestamp":"2026-03-02T09:13:55Z","author":{{"name":"Mona Octocat","email":"mona@example.com"}},"committer":{{"name":"GitHub","email":"noreply@github.com"}}}},"repository":{repo},"head_repository":{head}}}"#,
        actor = owner("mona", 583_231, "User"),
        repo = repo(642_115_342, "app"),
        head = repo(642_115_342, "app"),
    )
}

/// A user or organization object, with its URLs.
fn owner(login: &str, id: u64, kind: &str) -> String {
    let api = format!("https://api.github.com/users/{login}");
    format!(
        r#"{{"login":"{login}","id":{id},"node_id":"MDQ6VXNlcj{id:x}","avatar_url":"https://avatars.githubusercontent.com/u/{id}?v=4","gravatar_id":"","url":"{api}","html_url":"https://github.com/{login}","followers_url":"{api}/followers","following_url":"{api}/following{{/other_user}}","gists_url":"{api}/gists{{/gist_id}}","starred_url":"{api}/starred{{/owner}}{{/repo}}","subscriptions_url":"{api}/subscriptions","organizations_url":"{api}/orgs","repos_url":"{api}/repos","events_url":"{api}/events{{/privacy}}","received_events_url":"{api}/received_events","type":"{kind}","user_view_type":"public","site_admin":false}}"#
    )
}

/// A repository object's URL fields, as GitHub lists them.
const REPO_URLS: &[(&str, &str)] = &[
    ("forks_url", "/forks"),
    ("keys_url", "/keys{/key_id}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("teams_url", "/teams"),
    ("hooks_url", "/hooks"),
    ("issue_events_url", "/issues/events{/number}"),
    ("events_url", "/events"),
    ("assignees_url", "/assignees{/user}"),
    ("branches_url", "/branches{/branch}"),
    ("tags_url", "/tags"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("trees_url", "/git/trees{/sha}"),
    ("statuses_url", "/statuses/{sha}"),
    ("languages_url", "/languages"),
    ("stargazers_url", "/stargazers"),
    ("contributors_url", "/contributors"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("commits_url", "/commits{/sha}"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("comments_url", "/comments{/number}"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("contents_url", "/contents/{+path}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("merges_url", "/merges"),
    ("archive_url", "/{archive_format}{/ref}"),
    ("downloads_url", "/downloads"),
    ("issues_url", "/issues{/number}"),
    ("pulls_url", "/pulls{/number}"),
    ("milestones_url", "/milestones{/number}"),
    ("notifications_url", "/notifications{?since,all,participating}"),
    ("labels_url", "/labels{/name}"),
    ("releases_url", "/releases{/id}"),
    ("deployments_url", "/deployments"),
];

fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(GUIDE_PORT);
    let listener = match TcpListener::bind(("127.0.0.1", port)) {
        Ok(listener) => listener,
        Err(e) => {
            eprintln!(
                "jobserver: cannot listen on 127.0.0.1:{port}: {e} (is one running already? `-- 0` takes any free port)"
            );
            std::process::exit(1);
        }
    };
    if let Ok(addr) = listener.local_addr() {
        // benches/bench.py and tests/windows.sh read the port from this line, the first on stdout.
        println!("listening on {addr}");
        // The collections' `Link` and `nextLink` name absolute URLs, as GitHub's and Azure's do.
        let _ = ORIGIN.set(format!("http://{addr}"));
    }
    let counters = Arc::new(Counters::default());
    #[cfg(unix)]
    if let Some(path) = std::env::args().skip_while(|a| a != "--unix").nth(1) {
        let _ = std::fs::remove_file(&path);
        let unix = match UnixListener::bind(&path) {
            Ok(unix) => unix,
            Err(e) => {
                eprintln!("jobserver: cannot listen on {path}: {e}");
                std::process::exit(1);
            }
        };
        println!("listening on {path}");
        let counters = Arc::clone(&counters);
        std::thread::spawn(move || {
            for stream in unix.incoming().flatten() {
                counters.connections.fetch_add(1, Ordering::Relaxed);
                let counters = Arc::clone(&counters);
                let Ok(writer) = stream.try_clone() else { continue };
                std::thread::spawn(move || serve(stream, writer, None, &counters));
            }
        });
    }
    for stream in listener.incoming().flatten() {
        counters.connections.fetch_add(1, Ordering::Relaxed);
        let counters = Arc::clone(&counters);
        let _ = stream.set_nodelay(true);
        let (Ok(writer), Ok(tcp)) = (stream.try_clone(), stream.try_clone()) else { continue };
        std::thread::spawn(move || serve(stream, writer, Some(tcp), &counters));
    }
}

/// Serves one connection, TCP or Unix: `read_half` and `writer` are the same
/// socket, and `tcp` too when it is TCP (a reset needs it).
fn serve(read_half: impl Read, mut writer: impl Write, tcp: Option<TcpStream>, counters: &Counters) {
    let mut reader = BufReader::with_capacity(16 * 1024, read_half);
    let mut line = String::new();
    let mut reply = Vec::with_capacity(512);
    loop {
        // Request line, then headers up to the blank line; benchmark requests carry no body.
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let method = line.split_whitespace().next().unwrap_or("GET").to_string();
        let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut close = false;
        let mut bearer = None;
        let mut length = 0;
        let mut key = None;
        let mut if_none_match = None;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" || line == "\n" => break,
                Ok(_) => {
                    close |= line.to_ascii_lowercase().starts_with("connection: close");
                    if line.to_ascii_lowercase().starts_with("authorization: bearer ") {
                        bearer = Some(line[22..].trim().to_string());
                    }
                    if line.to_ascii_lowercase().starts_with("if-none-match:") {
                        if_none_match = Some(line[14..].trim().to_string());
                    }
                    if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = n.trim().parse().unwrap_or(0);
                    }
                    if line.to_ascii_lowercase().starts_with("idempotency-key:") {
                        key = Some(line[16..].trim().to_string());
                    }
                }
            }
        }
        // A submit's body (an ARM template, a job's JSON): read, and looked at only by `jobs`.
        let mut sent = Vec::new();
        if (&mut reader).take(length.min(1 << 20)).read_to_end(&mut sent).is_err() {
            return;
        }
        counters.requests.fetch_add(1, Ordering::Relaxed);
        if streamed(&target, &mut writer, counters) {
            return;
        }
        if let Some(page) = check_runs_page(&target) {
            let answer = lock(&counters.checks).answer(page, if_none_match.as_deref());
            if writer.write_all(&answer).is_err() || close {
                return;
            }
            continue;
        }
        if is_workflow_run(&target) {
            let answer = lock(&counters.run).answer(if_none_match.as_deref());
            if writer.write_all(&answer).is_err() || close {
                return;
            }
            continue;
        }
        let sent = String::from_utf8_lossy(&sent);
        let answer = outage(&target, counters).or_else(|| service(&method, &target, counters)).unwrap_or_else(|| {
            let (status, headers, body) = virtual_machines(&method, &target, counters)
                .or_else(|| arm(&method, &target, counters))
                .or_else(|| jobs(&method, &target, &sent, key.as_deref(), counters))
                .or_else(|| waits(&method, &target, counters))
                .or_else(|| storm(&method, &target, counters))
                .unwrap_or_else(|| {
                    let (status, body) = route(&target, bearer.as_deref(), counters);
                    (status, String::new(), body)
                });
            Answer::Reply(status, headers, body)
        });
        let (status, headers, body) = match answer {
            Answer::Reply(status, headers, body) => (status, headers, body),
            Answer::Reset => {
                // SO_LINGER 0: the close sends a reset, not an orderly end of the stream.
                if let Some(tcp) = &tcp {
                    let _ = socket2::SockRef::from(tcp).set_linger(Some(Duration::ZERO));
                }
                return;
            }
        };
        reply.clear();
        // A reply to HEAD is the GET's head alone.
        let shown = if method == "HEAD" { "" } else { body.as_str() };
        let _ = write!(
            reply,
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{shown}",
            body.len()
        );
        if writer.write_all(&reply).is_err() || close {
            return;
        }
    }
}

/// Azure Resource Manager's routes: (status, extra header lines, body), or `None` for another route.
fn arm(method: &str, target: &str, counters: &Counters) -> Option<(&'static str, String, String)> {
    const SUB: &str = "/subscriptions/s1";
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let rest = path.strip_prefix(SUB)?;
    let mut polls = counters.arm.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (kind, name) = rest.rsplit_once('/')?;
    let name = name.to_string();
    // One more status poll of `name`'s operation; whether it is done now.
    let mut poll = |name: &str| {
        let n = polls.entry(name.to_string()).or_insert(0);
        *n += 1;
        *n >= ARM_POLLS
    };
    let deployments = "/resourceGroups/rg/providers/Microsoft.Resources/deployments";
    let accounts = "/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts";
    let answer = match (method, kind) {
        ("PUT", k) if k == deployments => {
            polls.insert(name.clone(), 0);
            let header = format!(
                "Azure-AsyncOperation: {SUB}/providers/Microsoft.Resources/operations/{name}\r\nRetry-After: 1\r\n"
            );
            ("201 Created", header, format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Accepted"}}}}"#))
        }
        ("GET", "/providers/Microsoft.Resources/operations") => {
            let status = if poll(&name) { "Succeeded" } else { "Running" };
            ("200 OK", String::new(), format!(r#"{{"status":"{status}"}}"#))
        }
        ("GET", k) if k == deployments => {
            let done = polls.get(&name).is_some_and(|n| *n >= ARM_POLLS);
            let body = if done {
                format!(
                    r#"{{"name":"{name}","properties":{{"provisioningState":"Succeeded","outputs":{{"siteUrl":{{"type":"String","value":"https://{name}.azurewebsites.net"}}}}}}}}"#
                )
            } else {
                format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Running"}}}}"#)
            };
            ("200 OK", String::new(), body)
        }
        ("PUT", k) if k == accounts => {
            polls.insert(name.clone(), 0);
            (
                "201 Created",
                String::new(),
                format!(r#"{{"name":"{name}","properties":{{"provisioningState":"Creating"}}}}"#),
            )
        }
        ("GET", k) if k == accounts => {
            let state = if poll(&name) { "Succeeded" } else { "Creating" };
            ("200 OK", String::new(), format!(r#"{{"name":"{name}","properties":{{"provisioningState":"{state}"}}}}"#))
        }
        ("DELETE", k) if k == accounts => {
            polls.insert(format!("delete-{name}"), 0);
            let header =
                format!("Location: {SUB}/providers/Microsoft.Storage/operationResults/{name}\r\nRetry-After: 1\r\n");
            ("202 Accepted", header, String::new())
        }
        ("GET", "/providers/Microsoft.Storage/operationResults") => {
            let done = poll(&format!("delete-{name}"));
            (if done { "204 No Content" } else { "202 Accepted" }, String::new(), String::new())
        }
        _ => ("404 Not Found", String::new(), r#"{"error":{"code":"ResourceNotFound"}}"#.to_string()),
    };
    Some(answer)
}

/// The routes that hold their reply (streams, a blocking query): written here, to their end
/// (the connection then closes); `false` for another route.
fn streamed(target: &str, writer: &mut impl Write, counters: &Counters) -> bool {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let param = |name: &str| query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='));
    let kind = match path {
        "/rollout/reset" => {
            let after = Duration::from_millis(param("after").and_then(|v| v.parse().ok()).unwrap_or(0));
            *lock(&counters.rollout) =
                Rollout { done_at: Some((Instant::now() + after, SystemTime::now() + after)), ..Rollout::default() };
            return reply(writer, "200 OK", "", &format!(r#"{{"after_ms":{}}}"#, after.as_millis()));
        }
        "/rollout/stats" => {
            let rollout = lock(&counters.rollout);
            let ns = |t: Option<SystemTime>| {
                t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                    .map_or("null".to_string(), |d| d.as_nanos().to_string())
            };
            let body = format!(
                r#"{{"requests":{},"done_at_ns":{},"sent_ns":{}}}"#,
                rollout.requests,
                ns(rollout.done_at.map(|(_, wall)| wall)),
                ns(rollout.sent)
            );
            return reply(writer, "200 OK", "", &body);
        }
        "/rollout" | "/rollout/events" | "/rollout/watch" | "/v1/kv/rollout" | "/chat" => path,
        _ => return false,
    };
    let done_at = {
        let mut rollout = lock(&counters.rollout);
        rollout.requests += 1;
        rollout.done_at.map(|(at, _)| at)
    };
    let done = || done_at.is_some_and(|at| Instant::now() >= at);
    let status = |done: bool| if done { "done" } else { "pending" };
    match kind {
        "/rollout" => reply(writer, "200 OK", "", &format!(r#"{{"status":"{}"}}"#, status(done()))),
        "/v1/kv/rollout" => {
            // Consul's blocking query: held while the index asked for is the current one.
            let index: u64 = param("index").and_then(|v| v.parse().ok()).unwrap_or(0);
            let wait =
                param("wait").and_then(|v| v.strip_suffix('s')?.parse().ok()).map_or(HOLD_MAX, Duration::from_secs);
            let until = Instant::now() + wait.min(HOLD_MAX);
            while index >= 1 && !done() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            let value = if done() { "cmVhZHk=" } else { "cGVuZGluZw==" }; // base64 of "ready", "pending"
            let header = format!("X-Consul-Index: {}\r\n", if done() { 2 } else { 1 });
            let body =
                format!(r#"[{{"Key":"rollout","Value":"{value}","ModifyIndex":{}}}]"#, if done() { 2 } else { 1 });
            reply(writer, "200 OK", &header, &body)
        }
        "/chat" => {
            let pieces = ["Hel", "lo, ", "world"];
            let mut events: Vec<String> =
                pieces.iter().map(|p| format!("event: delta\ndata: {{\"text\":\"{p}\"}}\n\n")).collect();
            events.push("event: complete\ndata: {\"text\":\"Hello, world\",\"finish_reason\":\"stop\"}\n\n".into());
            let _ = stream_head(writer, "text/event-stream");
            for event in events {
                std::thread::sleep(Duration::from_millis(100));
                if chunk(writer, &event).is_err() {
                    return true;
                }
            }
            let _ = chunk(writer, "");
            true
        }
        sse_or_watch => {
            let sse = sse_or_watch == "/rollout/events";
            let (pending, finished) = if sse {
                ("id: 1\ndata: {\"status\":\"pending\"}\n\n", "id: 2\ndata: {\"status\":\"done\"}\n\n")
            } else {
                (
                    "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"rollout\"},\"status\":{\"active\":1,\"succeeded\":0}}}\n",
                    "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"rollout\"},\"status\":{\"active\":0,\"succeeded\":1}}}\n",
                )
            };
            let heartbeat = if sse { ": heartbeat\n\n" } else { "\n" };
            let _ = hold(writer, pending, finished, heartbeat, done_at, counters);
            true
        }
    }
}

/// A held stream: `pending` at once, `finished` when the rollout is done (its moment written to
/// the rollout's `sent`), heartbeats meanwhile, until the client goes away or [`HOLD_MAX`].
fn hold(
    writer: &mut impl Write,
    pending: &str,
    finished: &str,
    heartbeat: &str,
    done_at: Option<Instant>,
    counters: &Counters,
) -> std::io::Result<()> {
    let kind = if heartbeat == "\n" { "application/x-ndjson" } else { "text/event-stream" };
    stream_head(writer, kind)?;
    chunk(writer, pending)?;
    let started = Instant::now();
    let mut beat = Instant::now() + HEARTBEAT;
    let mut sent = false;
    while started.elapsed() < HOLD_MAX {
        if !sent && done_at.is_some_and(|at| Instant::now() >= at) {
            chunk(writer, finished)?;
            lock(&counters.rollout).sent = Some(SystemTime::now());
            sent = true;
        }
        if Instant::now() >= beat {
            chunk(writer, heartbeat)?;
            beat += HEARTBEAT;
        }
        // A millisecond's sleep: the done event leaves within about one of its moment.
        std::thread::sleep(Duration::from_millis(1));
    }
    chunk(writer, "")
}

/// A chunked reply's head, with `Content-Type: kind`.
fn stream_head(writer: &mut impl Write, kind: &str) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nTransfer-Encoding: chunked\r\nCache-Control: no-cache\r\n\r\n"
    );
    writer.write_all(head.as_bytes())?;
    writer.flush()
}

/// One chunk of a chunked body, flushed; the empty one ends the body.
fn chunk(writer: &mut impl Write, text: &str) -> std::io::Result<()> {
    let framed = format!("{:x}\r\n{text}\r\n", text.len());
    writer.write_all(framed.as_bytes())?;
    writer.flush()
}

/// A whole JSON reply, closing the connection; `true` (the route was answered).
fn reply(writer: &mut impl Write, status: &str, headers: &str, body: &str) -> bool {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = writer.write_all(head.as_bytes()).and_then(|()| writer.flush());
    true
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `/gh/repos/OWNER/REPO/actions/runs/ID`, any owner, repository and id.
fn is_workflow_run(target: &str) -> bool {
    let path = target.split_once('?').map_or(target, |(path, _)| path);
    let parts: Vec<&str> = path.split('/').collect();
    matches!(parts[..], ["", "gh", "repos", _, _, "actions", "runs", id] if id.parse::<u64>().is_ok())
}

fn route(target: &str, bearer: Option<&str>, counters: &Counters) -> (&'static str, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let now = SystemTime::now();
    if path.starts_with("/app/installations/") && path.ends_with("/access_tokens") {
        let default = std::env::var("JOBSERVER_TOKEN_TTL").ok().and_then(|n| n.parse().ok()).unwrap_or(3600);
        let ttl = query.strip_prefix("ttl=").and_then(|n| n.parse().ok()).unwrap_or(default);
        let expires = now + Duration::from_secs(ttl);
        let mut tokens = counters.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let nanos = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
        let token = format!("ghs_{:04}{nanos:08x}", tokens.len() + 1);
        tokens.push((token.clone(), expires));
        let stamp = humantime::format_rfc3339_seconds(expires);
        return ("201 Created", format!(r#"{{"token":"{token}","expires_at":"{stamp}"}}"#));
    }
    match path {
        "/private/job" => {
            let tokens = counters.tokens.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if !tokens.iter().any(|(token, expires)| Some(token.as_str()) == bearer && *expires > now) {
                counters.refused.fetch_add(1, Ordering::Relaxed);
                return ("401 Unauthorized", r#"{"message":"Bad credentials"}"#.to_string());
            }
            drop(tokens);
            route("/job", None, counters)
        }
        "/job" => {
            let n = counters.polls.fetch_add(1, Ordering::Relaxed) + 1;
            let status = if n >= counters.target.load(Ordering::Relaxed) { "done" } else { "pending" };
            ("200 OK", format!(r#"{{"status":"{status}","n":{n}}}"#))
        }
        "/reset" => {
            let n = query.strip_prefix("n=").and_then(|n| n.parse().ok()).unwrap_or(1);
            counters.target.store(n, Ordering::Relaxed);
            counters.polls.store(0, Ordering::Relaxed);
            // Every count starts again, as on a fresh server.
            lock(&counters.waits).clear();
            lock(&counters.arm).clear();
            lock(&counters.services).clear();
            counters.next_id.store(0, Ordering::Relaxed);
            counters.outage.store(false, Ordering::Relaxed);
            ("200 OK", format!(r#"{{"target":{n}}}"#))
        }
        "/status" => ("200 OK", r#"{"status":"green"}"#.to_string()),
        "/ok" => ("200 OK", r#"{"status":"done","n":1}"#.to_string()),
        "/gh/reset" => {
            let value = |key: &str| query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='));
            let after = value("after").and_then(|n| n.parse().ok()).unwrap_or(300);
            let conclusion = value("conclusion").unwrap_or("success");
            let reset = value("reset").and_then(|n| n.parse().ok());
            let run = Run::new(after, conclusion, reset);
            let size = run.bodies[0].0.len();
            *lock(&counters.run) = run;
            ("200 OK", format!(r#"{{"after":{after},"body_bytes":{size}}}"#))
        }
        "/gh/stats" => ("200 OK", lock(&counters.run).stats()),
        "/gh/checks/reset" => {
            let value = |key: &str| query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='));
            let after = value("after").and_then(|n| n.parse().ok()).unwrap_or(3);
            let checks = Checks::new(after, value("conclusion").unwrap_or("failure"));
            let sizes: Vec<String> = checks.pages.iter().map(|page| page[0].0.len().to_string()).collect();
            *lock(&counters.checks) = checks;
            ("200 OK", format!(r#"{{"after":{after},"page_bytes":[{}]}}"#, sizes.join(",")))
        }
        "/gh/checks/stats" => ("200 OK", lock(&counters.checks).stats()),
        "/containers/db/json" | "/containers/bad/json" => {
            let n = counters.polls.fetch_add(1, Ordering::Relaxed) + 1;
            let ended = if path == "/containers/db/json" { "healthy" } else { "unhealthy" };
            let health = if n >= counters.target.load(Ordering::Relaxed) { ended } else { "starting" };
            let body = format!(
                r#"{{"Id":"4f2c","Name":"/db","State":{{"Status":"running","Running":true,"Health":{{"Status":"{health}","FailingStreak":0}}}}}}"#
            );
            ("200 OK", body)
        }
        "/hang" => {
            std::thread::sleep(std::time::Duration::from_secs(60));
            ("200 OK", r#"{"status":"late"}"#.to_string())
        }
        "/stats" => (
            "200 OK",
            format!(
                r#"{{"connections":{},"requests":{},"refused":{}}}"#,
                counters.connections.load(Ordering::Relaxed),
                counters.requests.load(Ordering::Relaxed),
                counters.refused.load(Ordering::Relaxed)
            ),
        ),
        _ => ("404 Not Found", r#"{"error":"not found"}"#.to_string()),
    }
}

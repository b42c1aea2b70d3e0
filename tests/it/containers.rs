//! The container recipes of docs/guide/containers.md, read from the page (so that the page
//! cannot drift from what is run) and run against loopback servers with their URL's host and
//! port pointed there: each quick check (the Dockerfile's `HEALTHCHECK`, the Compose
//! `healthcheck`, the Kubernetes `exec` probe) passes with nothing printed, makes one attempt,
//! and fails with one line, under the 4 KiB Docker keeps and without the token it sent; the
//! init container waits for a service that starts late. Tools: Python's PyYAML, to read the
//! YAML recipes as Compose and Kubernetes read them.

use crate::support;

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::daemon::free_port;
use support::have_python_module;
use support::process::{Folder, poll, stderr, stdout};
use support::server::{Reply, Server};

/// What Docker keeps of a health check's output (moby's `maxOutputLen`).
const DOCKER_KEEPS: usize = 4096;
/// The token a failing check must never show.
const TOKEN: &str = "s3cr3t-health-token-0d5e";

fn page() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/guide/containers.md")).expect("the guide page")
}

/// The page's fenced blocks: the language after the fence, and the text.
fn blocks() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in page().lines() {
        match (open.take(), line.strip_prefix("```")) {
            (None, Some(lang)) => open = Some((lang.to_string(), String::new())),
            (Some(block), Some(_)) => found.push(block),
            (Some((lang, mut text)), None) => {
                text.push_str(line);
                text.push('\n');
                open = Some((lang, text));
            }
            (None, None) => {}
        }
    }
    found
}

fn strings(value: &Value) -> Vec<String> {
    let list = value.as_array().unwrap_or_else(|| panic!("a list of strings: {value}"));
    list.iter().map(|v| v.as_str().unwrap_or_else(|| panic!("a string: {v}")).to_string()).collect()
}

/// The Dockerfile recipe: its `HEALTHCHECK` line (continuations joined), split at ` CMD `
/// into Docker's options and the exec form's words.
fn healthcheck() -> (String, Vec<String>) {
    let lines: Vec<String> = blocks()
        .into_iter()
        .filter(|(lang, _)| lang == "dockerfile")
        .flat_map(|(_, text)| text.replace("\\\n", " ").lines().map(str::to_string).collect::<Vec<_>>())
        .filter(|line| line.starts_with("HEALTHCHECK "))
        .collect();
    assert_eq!(lines.len(), 1, "one HEALTHCHECK on the page");
    let (options, cmd) = lines[0].split_once(" CMD ").expect("HEALTHCHECK ... CMD [...]");
    let words: Value = serde_json::from_str(cmd.trim()).expect("CMD in exec form: a JSON list");
    (options.to_string(), strings(&words))
}

/// The page's YAML blocks as Compose and Kubernetes read them (PyYAML), by the key each starts with.
fn yaml_blocks() -> Vec<Value> {
    let read = "import json, sys, yaml; json.dump([yaml.safe_load(b) for b in json.load(sys.stdin)], sys.stdout)";
    let texts: Vec<String> = blocks().into_iter().filter(|(lang, _)| lang == "yaml").map(|(_, t)| t).collect();
    let mut child = std::process::Command::new("python3")
        .args(["-c", read])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run python3");
    let input = serde_json::to_vec(&texts).expect("the blocks as JSON");
    std::io::Write::write_all(&mut child.stdin.take().expect("python3's stdin"), &input).expect("write to python3");
    let out = child.wait_with_output().expect("python3 ends");
    assert!(out.status.success(), "a YAML block of the page does not parse");
    serde_json::from_slice::<Vec<Value>>(&out.stdout).expect("PyYAML's JSON")
}

/// The YAML block whose top key is `key`.
fn yaml_block(key: &str) -> Value {
    let mut found: Vec<Value> = yaml_blocks().into_iter().filter(|b| b.get(key).is_some()).collect();
    assert_eq!(found.len(), 1, "one YAML block of the page starts with {key}");
    found.remove(0)
}

/// The Compose recipe: the API's health check, its `test` without Compose's `CMD`.
fn compose() -> (Value, Vec<String>) {
    let block = yaml_block("services");
    let check = block["services"]["api"]["healthcheck"].clone();
    let test = strings(&check["test"]);
    assert_eq!(test[0], "CMD", "the exec form (CMD-SHELL would need a shell)");
    assert_eq!(block["services"]["worker"]["depends_on"]["api"]["condition"], "service_healthy");
    (check, test[1..].to_vec())
}

/// The Kubernetes probe recipe: the probe, and its command.
fn probe() -> (Value, Vec<String>) {
    let block = yaml_block("containers");
    let probe = block["containers"][0]["readinessProbe"].clone();
    let command = strings(&probe["exec"]["command"]);
    (probe, command)
}

/// An init container recipe, by its name: the image's entry point (`/poll`, the Dockerfile's),
/// then its args.
fn init_container(name: &str) -> Vec<String> {
    let blocks: Vec<Value> =
        yaml_blocks().into_iter().filter(|block| block["initContainers"][0]["name"].as_str() == Some(name)).collect();
    assert_eq!(blocks.len(), 1, "one init container named {name} on the page");
    let init = &blocks[0]["initContainers"][0];
    let image = init["image"].as_str().expect("an image");
    assert!(image.starts_with("ghcr.io/OWNER/poll:"), "{image}");
    assert!(init.get("command").is_none(), "the image's entry point runs");
    let mut words = vec!["/poll".to_string()];
    words.extend(strings(&init["args"]));
    words
}

/// A recipe's words as run here: this build's `poll`, the URL's origin replaced by `origin`
/// (its path kept), the mounted header file replaced by `headers`.
fn localize(words: &[String], origin: &str, headers: &Path) -> Vec<String> {
    assert_eq!(words[0], "/poll", "the recipe runs the image's /poll");
    let mut out = Vec::new();
    for word in &words[1..] {
        let word = if let Some(rest) = word.strip_prefix("http://") {
            let path = rest.find('/').map_or("/", |i| &rest[i..]);
            format!("{origin}{path}")
        } else if word.starts_with("@/") {
            format!("@{}", headers.display())
        } else {
            word.clone()
        };
        out.push(word);
    }
    out
}

/// Runs `words` (localized), timing it.
fn run(words: &[String]) -> (Output, Duration) {
    let args: Vec<&str> = words.iter().map(String::as_str).collect();
    let started = Instant::now();
    let out = poll(&args).output().expect("run poll");
    (out, started.elapsed())
}

/// `words` with a token to send: the recipe's own header file, or else `-H` before the URL.
fn with_token(words: &[String]) -> Vec<String> {
    if words.iter().any(|w| w.starts_with('@')) {
        return words.to_vec();
    }
    let mut out = words.to_vec();
    out.insert(out.len() - 1, "-H".to_string());
    out.insert(out.len() - 1, format!("Authorization: Bearer {TOKEN}"));
    out
}

/// A failed check: nothing on stdout, one line on stderr, within what Docker keeps, no token.
fn assert_one_line(name: &str, out: &Output) {
    let (stdout, stderr) = (stdout(out), stderr(out));
    assert_eq!(stdout, "", "{name}: stdout");
    assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
    assert!(stderr.ends_with('\n') && stderr.starts_with("poll: error: "), "{name}: {stderr}");
    assert!(out.stdout.len() + out.stderr.len() < DOCKER_KEEPS, "{name}: {} bytes", out.stderr.len());
    assert!(!stderr.contains(TOKEN), "{name}: the token is shown: {stderr}");
}

/// One quick check, `words` as the page has them, against every kind of server.
fn check_the_quick_check(name: &str, words: &[String]) {
    let folder = Folder::new(&format!("containers-{name}"));
    let headers = folder.path("headers");
    std::fs::write(&headers, format!("Authorization: Bearer {TOKEN}\n")).expect("write the header file");

    // Healthy: exit 0 and nothing at all printed, even with a body larger than Docker keeps.
    let body = format!("{{\"status\":\"ok\",\"pad\":\"{}\"}}", "x".repeat(64 * 1024));
    let server = Server::start(vec![Reply::json(200, &body)]).expect_hits(1);
    let (out, _) = run(&localize(words, &server.origin(), &headers));
    assert_eq!((out.status.code(), stdout(&out), stderr(&out)), (Some(0), String::new(), String::new()), "{name}");
    drop(server);

    // A 503 with Retry-After and a large body that quotes the token: one attempt, exit 5.
    let busy = format!("busy {TOKEN} {}", "y".repeat(1 << 20));
    let server = Server::start(vec![Reply::text(503, &busy).header("Retry-After", "1")]).expect_hits(1);
    let url = format!("{}/health", server.origin());
    let (out, _) = run(&with_token(&localize(words, &server.origin(), &headers)));
    assert_eq!(out.status.code(), Some(5), "{name}: {}", stderr(&out));
    assert_one_line(name, &out);
    let line = format!("poll: error: gave up after 1 failure: HTTP 503 (raise --retries to tolerate more) [{url}]\n");
    assert_eq!(stderr(&out), line, "{name}");
    let sent = server.requests();
    assert_eq!(sent[0].header("authorization"), Some(format!("Bearer {TOKEN}").as_str()), "{name}: the token went out");
    drop(server);

    // A 401 that echoes the token in its body and its WWW-Authenticate: exit 3.
    let denied = Reply::text(401, &format!("invalid token {TOKEN}"))
        .header("WWW-Authenticate", &format!("Bearer error=\"invalid_token\", token=\"{TOKEN}\""));
    let server = Server::start(vec![denied]).expect_hits(1);
    let (out, _) = run(&with_token(&localize(words, &server.origin(), &headers)));
    assert_eq!(out.status.code(), Some(3), "{name}: {}", stderr(&out));
    assert_one_line(name, &out);
    drop(server);

    // Nothing listening: not up yet, and the next attempt could only start after the deadline,
    // so there is none: exit 1 at once.
    let origin = format!("http://127.0.0.1:{}", free_port());
    let (out, took) = run(&with_token(&localize(words, &origin, &headers)));
    assert_eq!(out.status.code(), Some(1), "{name}: {}", stderr(&out));
    assert_one_line(name, &out);
    assert!(stderr(&out).contains("never reached: connection refused"), "{name}: {}", stderr(&out));
    assert!(took < Duration::from_millis(1500), "{name}: a refused check took {took:?}");
}

#[test]
fn the_quick_checks_share_their_flags_and_stay_within_the_engines_timeouts() {
    if !have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)") {
        return;
    }
    let (options, dockerfile) = healthcheck();
    let (compose_check, compose) = compose();
    let (probe_check, probe) = probe();
    // One set of flags for "one quick check"; the probe adds its header file.
    let without_headers = |words: &[String]| {
        let mut out = Vec::new();
        let mut skip = false;
        for word in words {
            if std::mem::take(&mut skip) {
                continue;
            }
            skip = word == "-H";
            if !skip {
                out.push(word.clone());
            }
        }
        out
    };
    let flags: Vec<String> =
        ["--retries", "0", "--timeout", "2s", "--interval", "2s", "-q", "-o", "/dev/null"].map(String::from).to_vec();
    for (name, words) in [("Dockerfile", &dockerfile), ("Compose", &compose), ("probe", &probe)] {
        let words = without_headers(words);
        assert_eq!(words[1..words.len() - 1], flags, "{name}");
        assert_eq!(words[words.len() - 1], "http://127.0.0.1:8080/health", "{name}");
    }
    assert_eq!(probe[probe.len() - 3..probe.len() - 1], ["-H", "@/etc/poll/headers"]);
    // Each engine gives the check longer than poll's own 2 s, so that poll's line says why.
    assert!(options.contains(" --timeout=3s "), "{options}");
    assert_eq!(compose_check["timeout"], "3s");
    assert_eq!(probe_check["timeoutSeconds"], 3);
}

#[test]
fn the_dockerfile_healthcheck_passes_quietly_and_fails_with_one_line() {
    check_the_quick_check("dockerfile", &healthcheck().1);
}

#[test]
fn the_compose_healthcheck_passes_quietly_and_fails_with_one_line() {
    if !have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)") {
        return;
    }
    check_the_quick_check("compose", &compose().1);
}

#[test]
fn the_kubernetes_probe_passes_quietly_and_fails_with_one_line() {
    if !have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)") {
        return;
    }
    check_the_quick_check("probe", &probe().1);
}

#[test]
fn a_quick_check_of_a_server_that_never_answers_ends_at_its_timeout() {
    let words = healthcheck().1;
    let folder = Folder::new("containers-hang");
    let server = Server::start(vec![Reply::hang()]).expect_hits(1);
    let (out, took) = run(&with_token(&localize(&words, &server.origin(), &folder.path("headers"))));
    // The attempt's own timeout is the time left of --timeout; a timed-out request is a
    // transient failure, and --retries 0 tolerates none.
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_one_line("hang", &out);
    let line = format!(
        "poll: error: gave up after 1 failure: request timed out (raise --retries to tolerate more) [{}/health]\n",
        server.origin()
    );
    assert_eq!(stderr(&out), line);
    // The 2 s of --timeout, and not much more: within Docker's 3 s.
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_millis(2900), "{took:?}");
}

#[test]
fn the_init_container_waits_for_a_service_that_starts_late() {
    if !have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)") {
        return;
    }
    let words = init_container("wait-for-auth");
    let folder = Folder::new("containers-init");
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let args = localize(&words, &origin, &folder.path("headers"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let child = poll(&args).spawn().expect("start poll");
    // Refused first (not up yet: tried again at --interval), then a 503 (retried), then ready.
    std::thread::sleep(Duration::from_millis(300));
    let server = Server::start_on(port, vec![Reply::status(503), Reply::json(200, "{\"status\":\"ok\"}")]);
    let out = child.wait_with_output().expect("poll ends");
    let took = started.elapsed();
    assert_eq!((out.status.code(), stdout(&out), stderr(&out)), (Some(0), String::new(), String::new()));
    assert_eq!(server.hits(), 2);
    assert!(server.requests().iter().all(|r| r.path == "/health"));
    // The second attempt came --interval (2 s) after the refused first.
    assert!(took >= Duration::from_secs(2), "{took:?}");
}

#[test]
fn the_init_container_waits_for_a_database_port_that_opens_late() {
    if !have_python_module("yaml", "pip install pyyaml (or apt-get install python3-yaml)") {
        return;
    }
    let words = init_container("wait-for-db");
    let target = words.last().cloned().unwrap_or_default();
    assert!(target.starts_with("tcp://"), "{target}");
    let port = free_port();
    let mut args: Vec<String> = words[1..words.len() - 1].to_vec();
    args.push(format!("tcp://127.0.0.1:{port}"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let started = Instant::now();
    let child = poll(&args).spawn().expect("start poll");
    // Refused first (not up yet: tried again at --interval), then open.
    std::thread::sleep(Duration::from_millis(300));
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).expect("bind the database's port");
    let out = child.wait_with_output().expect("poll ends");
    drop(listener);
    assert_eq!((out.status.code(), stdout(&out), stderr(&out)), (Some(0), String::new(), String::new()));
    assert!(started.elapsed() >= Duration::from_secs(2), "{:?}", started.elapsed());
}

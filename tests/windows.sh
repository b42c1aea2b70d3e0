#!/usr/bin/env bash
# The other targets, end to end, against loopback servers this script starts and stops by PID:
#   windows  poll.exe (x86_64-pc-windows-gnu, linked by mingw-w64) under Wine: a poll until a
#            condition, a 503 with Retry-After, --submit, -o, a jq error, the deadline, --state
#            shared by three processes, --auth-cmd through cmd /C (and its kill at the deadline),
#            --start with a .cmd that starts a child (its job object ends both), unix:// refused,
#            --unix-socket refused, --request-timeout against a server that never answers,
#            -o NUL, a reader that closes stdout early, Ctrl-C, and the library's unit tests
#   musl     the static Linux build (x86_64-unknown-linux-musl) as the release's archive holds it
#            (`dist build`): no dynamic dependencies, one poll, its dependency list read back by
#            rust-audit-info, in an empty root (a `scratch` image) the built-in Mozilla roots; and
#            the container image (the Dockerfile, by buildah), unpacked by umoci and run under chroot
#
#   tests/windows.sh [windows|musl]...     (both when none is named)
#
# Each case checks the exit code and the stdout bytes. A missing tool is one `SKIPPED:` line
# naming its install command, or a failure under POLL_TEST_REQUIRE_TOOLS=1 (as .ci/run sets).
# Debug builds, once each, for poll.exe: the cases test behaviour, not speed. The musl build is
# the release's (its `dist` profile): the image's size and the binary's dependency list are
# what the release ships.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
target=${CARGO_TARGET_DIR:-$repo/target}
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(windows musl)

failed=0
passed=0
skipped=0
pids=()
work=$(mktemp -d "${TMPDIR:-/tmp}/poll-targets.XXXXXX")
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [ -n "${WINEPREFIX:-}" ] && [ -x "${wineserver:-}" ]; then "$wineserver" -k 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

# need TOOL INSTALL WHAT: true when TOOL is on PATH (or is an executable path).
need() {
    if command -v "$1" >/dev/null 2>&1; then return 0; fi
    if [ "${POLL_TEST_REQUIRE_TOOLS:-}" = 1 ]; then
        echo "tests/windows.sh: $1 is required (POLL_TEST_REQUIRE_TOOLS=1): $2" >&2
        exit 1
    fi
    echo "SKIPPED: $3: $1 is missing: $2" >&2
    skipped=$((skipped + 1))
    return 1
}

# check NAME WANT_CODE WANT_STDOUT_FILE GOT_CODE GOT_STDOUT_FILE STDERR_FILE
check() {
    if [ "$4" = "$2" ] && cmp -s "$3" "$5"; then
        echo "ok: $1"
        passed=$((passed + 1))
    else
        echo "FAILED: $1: exit $4 (want $2); stdout $(od -c "$5" | head -3 | tr -s ' ') (want $(cat "$3"))" >&2
        sed 's/^/    stderr: /' "$6" >&2
        failed=$((failed + 1))
    fi
}

# expect NAME CODE STDOUT -- COMMAND...: runs COMMAND (bounded to 60 s) and checks it.
expect() {
    local name=$1 code=$2 want=$3
    shift 4
    printf '%s' "$want" >"$work/want"
    local got=0
    timeout 60 "$@" >"$work/out" 2>"$work/err" </dev/null || got=$?
    check "$name" "$code" "$work/want" "$got" "$work/out" "$work/err"
}

# The loopback job server (benches/jobserver.rs), on a free port; sets $base.
start_jobserver() {
    local bin=$1 log=$work/jobserver.log
    "$bin" 0 >"$log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        if grep -q "listening on" "$log"; then break; fi
        sleep 0.05
    done
    base="http://$(grep -m1 -o '127\.0\.0\.1:[0-9]*' "$log")"
}

get() { python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$1"; }
post() {
    python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(urllib.request.Request(sys.argv[1], b"", method="POST")).read().decode())' "$1"
}

# A loopback server whose every GET answers a JSON string of 1 MiB, more than a pipe holds; sets $big_url.
start_big_server() {
    python3 -c '
import http.server
body = b"\"" + b"x" * (1 << 20) + b"\""
class Big(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass
    def log_message(self, *args):
        pass
server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Big)
print(server.server_address[1], flush=True)
server.serve_forever()' >"$work/big.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        if [ -s "$work/big.log" ]; then break; fi
        sleep 0.05
    done
    big_url="http://127.0.0.1:$(head -1 "$work/big.log")/"
}

# The loopback HTTPS server (tests/tls_server.py) with the fixture certificate (its own CA); sets $tls_url.
start_tls_server() {
    python3 tests/tls_server.py tests/fixtures/cert.pem tests/fixtures/key.pem >"$work/tls.log" 2>&1 &
    pids+=($!)
    for _ in $(seq 100); do
        if [ -s "$work/tls.log" ]; then break; fi
        sleep 0.05
    done
    tls_url="https://127.0.0.1:$(head -1 "$work/tls.log")/"
}

windows() {
    need x86_64-w64-mingw32-gcc "apt-get install mingw-w64" "poll.exe under Wine" || return 0
    wine=$(command -v wine64 || echo /usr/lib/wine/wine64)
    wineserver=$(command -v wineserver || echo /usr/lib/wine/wineserver)
    need "$wine" "apt-get install wine64" "poll.exe under Wine" || return 0
    if ! rustup target list --installed 2>/dev/null | grep -qx x86_64-pc-windows-gnu; then
        need rustup-target-x86_64-pc-windows-gnu "rustup target add x86_64-pc-windows-gnu" "poll.exe under Wine" || return 0
    fi
    cargo build --locked --quiet --target x86_64-pc-windows-gnu --bin poll
    cargo build --locked --quiet --example jobserver
    local exe=$target/x86_64-pc-windows-gnu/debug/poll.exe
    echo "poll.exe: $(stat -c %s "$exe") bytes (debug)"

    # A Wine prefix of our own, with the stand-in for bcryptprimitives.dll (tests/wine/).
    export WINEPREFIX=$target/wine WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    if [ ! -f "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" ]; then
        timeout 300 "$wine" cmd /c exit >/dev/null 2>&1 </dev/null || true
        x86_64-w64-mingw32-gcc -shared -O2 -o "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll" \
            tests/wine/bcryptprimitives.c tests/wine/bcryptprimitives.def -ladvapi32
    fi
    # Wine's own services start with the first program of a prefix and hold its stdout and stderr
    # about 2.5 s: one wineserver kept running and one poll.exe with its output on /dev/null come
    # first, so that no case below measures Wine's start instead of poll's. (A server still up from
    # making the prefix is waited out: -p cannot make a running one persistent.)
    timeout 10 "$wineserver" -w || true
    "$wineserver" -p || true
    timeout 300 "$wine" "$exe" --version >/dev/null 2>&1 </dev/null || true
    start_jobserver "$target/debug/examples/jobserver"
    local w="$wine $exe"
    : >"$work/empty"
    winpath() { printf 'Z:%s' "${1//\//\\}"; }

    get "$base/reset?n=3" >/dev/null
    expect "windows: polls until the condition holds" 0 '{"status":"done","n":3}' -- \
        $w --until '.status=="done"' -i 50ms "$base/job"

    # Retry-After: 1. The wall time in milliseconds, and the retry's own time since poll.exe started
    # (the JSON log's elapsed_ms), which Wine's start-up cannot pad.
    get "$base/reset?n=1" >/dev/null
    local started
    started=$(date +%s%N)
    expect "windows: a 503 with Retry-After waits as told" 0 '{"status":"done","n":2}' -- \
        $w --log-format json "$base/busy"
    local took=$((($(date +%s%N) - started) / 1000000)) retried
    retried=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{") and json.loads(line).get("attempt") == 2:
        print(json.loads(line)["elapsed_ms"])
        break
else:
    print(0)' "$work/err" 2>/dev/null || echo 0)
    if [ "$took" -lt 900 ] || [ "$retried" -lt 900 ]; then
        echo "FAILED: windows: the retry came before Retry-After's second (run ${took} ms, retry at ${retried} ms)" >&2
        failed=$((failed + 1))
    else
        echo "ok: windows: the retry waited Retry-After's second (run ${took} ms, retry at ${retried} ms)"
        passed=$((passed + 1))
    fi

    expect "windows: --submit polls the job it started" 0 \
        '{"id":7,"status":"done","artifact":"https://cdn.example.com/build-7.tar.gz"}' -- \
        $w --submit --json '{"name":"build"}' --status-url '"/jobs/\(.id)"' -i 50ms "$base/jobs"

    expect "windows: -o writes the body to a file, not stdout" 0 '' -- $w -o "$(winpath "$work/body.json")" "$base/ok"
    printf '%s' '{"status":"done","n":1}' >"$work/want-body"
    check "windows: -o's file holds the body" 0 "$work/want-body" 0 "$work/body.json" "$work/err"

    expect "windows: a filter that does not compile is a usage error" 2 '' -- $w --until '.status==' "$base/job"

    get "$base/reset?n=1000000" >/dev/null
    expect "windows: the deadline ends the run" 1 '' -- $w --until '.status=="done"' -i 100ms --timeout 1s "$base/job"

    # Three processes, one --state file, one request a second between them: the last waits two.
    local state
    state=$(winpath "$work/api.state")
    started=$(date +%s%N)
    local runs=()
    for i in 1 2 3; do
        timeout 60 $w --state "$state" --rate 1/s "$base/ok" >"$work/state-$i.out" 2>"$work/state-$i.err" </dev/null &
        runs+=($!)
    done
    printf '%s' '{"status":"done","n":1}' >"$work/want-ok"
    for i in 1 2 3; do
        local code=0
        wait "${runs[$((i - 1))]}" || code=$?
        check "windows: --state FILE shared by three processes ($i)" 0 "$work/want-ok" "$code" "$work/state-$i.out" "$work/state-$i.err"
    done
    local waited=$((($(date +%s%N) - started) / 1000000))
    if [ "$waited" -lt 1800 ] || ! python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$work/api.state"; then
        echo "FAILED: windows: --state: three runs at 1/s took ${waited} ms (want >= 2 s), or the file is no JSON" >&2
        failed=$((failed + 1))
    else
        echo "ok: windows: --state spaced the three runs (${waited} ms) and holds JSON"
        passed=$((passed + 1))
    fi

    # --auth-cmd through cmd /C: cmd's own syntax (`if ... ( )`), the token as Bearer.
    get "$base/reset?n=1" >/dev/null
    local token
    token=$(post "$base/app/installations/1/access_tokens" | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')
    expect "windows: --auth-cmd runs through cmd /C" 0 '{"status":"done","n":1}' -- \
        $w --auth-cmd "if 1==1 (echo $token)" "$base/private/job"
    started=$SECONDS
    expect "windows: --auth-cmd still running at the deadline is killed" 1 '' -- \
        $w --auth-cmd "ping -n 45 127.0.0.1 >nul" --timeout 2s "$base/private/job"
    if [ $((SECONDS - started)) -gt 15 ]; then
        echo "FAILED: windows: --auth-cmd's kill took $((SECONDS - started)) s" >&2
        failed=$((failed + 1))
    fi
    # Wine's taskkill has no /T, so the ping that cmd started outlives it there (not on Windows).
    pkill -f -x '.*ping -n 45 127\.0\.0\.1' 2>/dev/null || true

    expect "windows: --unix-socket is a usage error" 2 '' -- $w --unix-socket 'C:\docker.sock' http://localhost/
    if ! grep -q "needs a Unix-like system" "$work/err"; then
        echo "FAILED: windows: --unix-socket's error does not say why" >&2
        failed=$((failed + 1))
    fi

    # https://, the server's CA only in SSL_CERT_FILE (Wine passes the environment on).
    start_tls_server
    expect "windows: https:// trusts a CA in SSL_CERT_FILE" 0 '{"status":"done","n":1}' -- \
        env SSL_CERT_FILE="$(winpath "$repo/tests/fixtures/cert.pem")" SSL_CERT_DIR= $w "$tls_url"
    expect "windows: https:// with an empty store fails at once" 3 '' -- \
        env SSL_CERT_FILE="$(winpath "$work/empty")" SSL_CERT_DIR= $w "$tls_url"

    # A server that reads the request and never answers (the job server's /hang): 20 runs, each
    # exit 5 within 1.5 s after exactly two requests. A read whose wait ended a little early was
    # tried again with under a millisecond left, a timeout of 0 to Windows: none (issue 42).
    requests() { get "$base/stats" | python3 -c 'import json, sys; print(json.load(sys.stdin)["requests"])'; }
    local bad=() slowest=0
    for i in $(seq 20); do
        local before after sent code=0
        before=$(requests)
        started=$(date +%s%N)
        timeout 10 $w --retries 1 --request-timeout 300ms "$base/hang" >"$work/out" 2>"$work/err" </dev/null || code=$?
        took=$((($(date +%s%N) - started) / 1000000))
        after=$(requests)
        sent=$((after - before - 1)) # /stats counts its own request
        if [ "$took" -gt "$slowest" ]; then slowest=$took; fi
        if [ "$code" != 5 ] || [ "$took" -gt 1500 ] || [ "$sent" != 2 ]; then
            bad+=("run $i: exit $code in $took ms after $sent requests")
        fi
    done
    if [ ${#bad[@]} -gt 0 ]; then
        echo "FAILED: windows: --request-timeout 300ms against a server that never answers: ${bad[*]}" >&2
        failed=$((failed + 1))
    else
        echo "ok: windows: --request-timeout 300ms against a server that never answers: 20 runs, exit 5 after 2 requests (slowest $slowest ms)"
        passed=$((passed + 1))
    fi

    # -o NUL, in any case or as \\.\NUL, discards the body as -o /dev/null does: no file, no rename over it.
    mkdir "$work/nul"
    cd "$work/nul"
    for name in NUL nul '\\.\NUL'; do
        expect "windows: -o $name discards the body" 0 '' -- $w -o "$name" "$base/ok"
    done
    cd "$repo"
    if [ -n "$(ls -A "$work/nul")" ]; then
        echo "FAILED: windows: -o NUL left files: $(ls -A "$work/nul")" >&2
        failed=$((failed + 1))
    else
        echo "ok: windows: -o NUL left no file"
        passed=$((passed + 1))
    fi

    # A reader that closes stdout early (`| head -c 10`) is no failure, as on Unix: poll.exe's own exit
    # status is 0. The body is more than the pipe holds, so poll.exe is still writing when head exits.
    start_big_server
    { code=0; timeout 60 $w "$big_url" 2>"$work/err" </dev/null || code=$?; echo "$code" >"$work/code"; } | head -c 10 >"$work/out"
    printf '%s' '"xxxxxxxxx' >"$work/want"
    # --start (issue 50): a .cmd that starts a child, in a job object that ends both at the end, whatever
    # Wine's taskkill lacks; the target comes up after the start (a listener of this script's).
    local port listener
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    printf '@echo off\r\nstart /b ping -n 61 127.0.0.1 >nul\r\nping -n 62 127.0.0.1 >nul\r\n' >"$work/server.cmd"
    python3 -c 'import socket,sys,time; time.sleep(3); s=socket.socket(); s.bind(("127.0.0.1",int(sys.argv[1]))); s.listen(); time.sleep(30)' "$port" &
    listener=$!
    pids+=("$listener")
    expect "windows: --start runs a .cmd, waits for its port, runs -- CMD, ends the job" 0 '' -- \
        $w --start "$(winpath "$work/server.cmd")" --timeout 30s -i 200ms "tcp://127.0.0.1:$port" -- cmd /c exit 0
    kill "$listener" 2>/dev/null || true
    unset 'pids[-1]'
    sleep 1
    if pgrep -f 'ping -n 6[12] 127' >/dev/null; then
        echo "FAILED: windows: --start's job object left the .cmd's child running" >&2
        failed=$((failed + 1))
        pkill -f 'ping -n 6[12] 127' || true
    else
        echo "ok: windows: --start's job object ended the .cmd and its child"
        passed=$((passed + 1))
    fi
    expect "windows: a --start command that exits ends the run with exit 3" 3 '' -- \
        $w --start "exit 1" --timeout 30s -i 10s "tcp://127.0.0.1:$port" -- cmd /c exit 0
    expect "windows: unix:// needs a Unix-like system" 2 '' -- $w unix:///tmp/db.sock

    check "windows: a reader that closes stdout early ends nothing" 0 "$work/want" "$(cat "$work/code")" "$work/out" "$work/err"

    # Ctrl-C: Wine turns SIGINT to its process into the console's CTRL_C_EVENT.
    get "$base/reset?n=1000000" >/dev/null
    $w --until '.status=="done"' -i 100ms "$base/job" >"$work/ctrlc.out" 2>"$work/ctrlc.err" </dev/null &
    local pid=$!
    pids+=("$pid")
    sleep 2
    kill -INT "$pid"
    local code=0
    wait "$pid" || code=$?
    unset 'pids[-1]'
    check "windows: Ctrl-C ends the run with 130" 130 "$work/empty" "$code" "$work/ctrlc.out" "$work/ctrlc.err"

    # The library's unit tests as Windows builds them, the cfg(windows) halves included (files,
    # processes, signals, sockets). The Redis store's need a redis-server Wine cannot start.
    local units
    units=$(cargo test --locked --quiet --target x86_64-pc-windows-gnu --lib --no-run --message-format=json |
        python3 -c 'import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("executable") and message.get("profile", {}).get("test"):
        print(message["executable"])')
    if timeout 300 "$wine" "$units" --skip state::redis >"$work/units.out" 2>&1 </dev/null; then
        echo "ok: windows: the library's unit tests ($(grep -o '[0-9]* passed' "$work/units.out" | tail -1))"
        passed=$((passed + 1))
    else
        echo "FAILED: windows: the library's unit tests:" >&2
        grep -v ' ok$' "$work/units.out" | tail -40 | sed 's/^/    /' >&2
        failed=$((failed + 1))
    fi
}

musl() {
    need musl-gcc "apt-get install musl-tools" "the static musl build" || return 0
    if ! rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl; then
        need rustup-target-x86_64-unknown-linux-musl "rustup target add x86_64-unknown-linux-musl" "the static musl build" || return 0
    fi
    need dist "cargo install cargo-dist --version 0.34.0 --locked" "the static musl build as the release makes it" || return 0
    need cargo-auditable "cargo install cargo-auditable --version 0.7.7 --locked" "the static musl build as the release makes it" || return 0
    # The release's archive of this target, made as release.yml's local job makes it (`dist build`
    # with the plan's arguments: `cargo auditable build --profile dist`, static): the image's size
    # and the binary's dependency list are what the release ships, which a debug build is not.
    local distrib=$target/distrib name=poll-x86_64-unknown-linux-musl started=$SECONDS
    if ! CARGO_TARGET_DIR=$target dist build --artifacts=local --target=x86_64-unknown-linux-musl \
        --output-format=json >"$work/dist.json" 2>"$work/dist.log" </dev/null; then
        echo "FAILED: musl: dist build --target=x86_64-unknown-linux-musl:" >&2
        tail -40 "$work/dist.log" | sed 's/^/    /' >&2
        failed=$((failed + 1))
        return 0
    fi
    if ! (cd "$distrib" && sha256sum --check --strict --quiet "$name.tar.gz.sha256"); then
        echo "FAILED: musl: $name.tar.gz is not the archive its .sha256 names" >&2
        failed=$((failed + 1))
        return 0
    fi
    tar -xzf "$distrib/$name.tar.gz" -C "$work"
    local bin=$work/$name/poll
    echo "musl poll: $(stat -c %s "$bin") bytes (the release's archive, built in $((SECONDS - started)) s)"
    cargo build --locked --quiet --example jobserver
    local linked=0
    ldd "$bin" >"$work/ldd" 2>&1 || linked=$?
    if grep -Eq "not a dynamic executable|statically linked" "$work/ldd"; then
        echo "ok: musl: ldd: $(tr -d '\t' <"$work/ldd")"
        passed=$((passed + 1))
    else
        echo "FAILED: musl: ldd finds dynamic dependencies (exit $linked): $(cat "$work/ldd")" >&2
        failed=$((failed + 1))
    fi
    start_jobserver "$target/debug/examples/jobserver"
    get "$base/reset?n=2" >/dev/null
    expect "musl: polls until the condition holds" 0 '{"status":"done","n":2}' -- \
        "$bin" --until '.status=="done"' -i 50ms "$base/job"

    auditable "$bin"

    # In an empty root (as in a `scratch` image) no store is found: the Mozilla roots serve, -v
    # says so, and the test server's own CA is not among them. Needs root, or user namespaces.
    local root=$work/scratch chroot=()
    mkdir -p "$root"
    cp "$bin" "$root/poll"
    if [ "$(id -u)" = 0 ]; then chroot=(chroot "$root"); elif unshare -r true 2>/dev/null; then chroot=(unshare -r chroot "$root"); fi
    need python3 "apt-get install python3" "the musl build in an empty root" || return 0
    if [ ${#chroot[@]} -eq 0 ]; then
        if [ "${POLL_TEST_REQUIRE_TOOLS:-}" = 1 ]; then
            echo "tests/windows.sh: the musl build in an empty root needs root or user namespaces (POLL_TEST_REQUIRE_TOOLS=1)" >&2
            exit 1
        fi
        echo "SKIPPED: musl in an empty root: neither root nor user namespaces here" >&2
        skipped=$((skipped + 1))
        return 0
    fi
    start_tls_server
    expect "musl: in an empty root, the Mozilla roots (which lack the test CA)" 3 '' -- \
        env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "${chroot[@]}" /poll -v --retries 0 "$tls_url"
    if ! grep -q "trusted roots: no system store found; the [0-9]* built-in Mozilla roots serve instead" "$work/err"; then
        echo "FAILED: musl: -v does not say that the Mozilla roots serve: $(cat "$work/err")" >&2
        failed=$((failed + 1))
    fi

    image "$distrib/$name.tar.gz" "$name"
}

# auditable BIN: the dependency list `cargo auditable` put in the binary, read back by
# rust-audit-info (the tool of the cargo-auditable project, as scanners read it): every crate of
# Cargo.lock that it names at the version Cargo.lock has, ureq, rustls and jaq-core among them.
auditable() {
    need rust-audit-info "cargo install rust-audit-info --version 0.5.4 --locked" "the binary's dependency list" || return 0
    local code=0
    rust-audit-info "$1" >"$work/audit.json" 2>"$work/err" || code=$?
    if [ "$code" != 0 ]; then
        echo "FAILED: musl: rust-audit-info finds no dependency list in the binary (exit $code): $(cat "$work/err")" >&2
        failed=$((failed + 1))
        return 0
    fi
    local said
    if said=$(python3 - "$work/audit.json" Cargo.lock <<'PY'
import json, re, sys
audit = json.load(open(sys.argv[1]))
locked = set(re.findall(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"', open(sys.argv[2]).read()))
found = {(p["name"], p["version"]) for p in audit["packages"]}
wrong = sorted(found - locked)
def fail(message):
    print(message)
    sys.exit(1)
if wrong:
    fail("not as in Cargo.lock: %s" % wrong)
root = [p for p in audit["packages"] if p.get("root")]
if [(p["name"], p["kind"] if "kind" in p else "runtime") for p in root] != [("poll", "runtime")]:
    fail("the root package is not poll: %s" % root)
named = []
for crate in ["ureq", "rustls", "jaq-core"]:
    versions = sorted(v for n, v in found if n == crate)
    want = sorted(v for n, v in locked if n == crate)
    if versions != want or len(versions) != 1:
        fail("%s: %s in the binary, %s in Cargo.lock" % (crate, versions, want))
    named.append("%s %s" % (crate, versions[0]))
print("%d crates, %s, as in Cargo.lock" % (len(found), ", ".join(named)))
PY
    ); then
        echo "ok: musl: rust-audit-info reads the binary's dependency list: $said"
        passed=$((passed + 1))
    else
        echo "FAILED: musl: rust-audit-info's list: $said" >&2
        failed=$((failed + 1))
    fi
}

# image ARCHIVE NAME: the release's container image, built from the repository's Dockerfile by
# buildah (its vfs driver: no daemon, no overlay mount) with the context publish-image.yml makes
# from the archive, exported as an OCI layout, unpacked by umoci, and run under chroot in that
# root file system alone, as the user the image names.
image() {
    need buildah "apt-get install buildah" "the container image" || return 0
    need umoci "apt-get install umoci" "the container image" || return 0
    if [ "$(id -u)" != 0 ]; then
        if [ "${POLL_TEST_REQUIRE_TOOLS:-}" = 1 ]; then
            echo "tests/windows.sh: the container image needs root (POLL_TEST_REQUIRE_TOOLS=1)" >&2
            exit 1
        fi
        echo "SKIPPED: the container image: buildah's vfs storage, umoci's unpack and chroot need root" >&2
        skipped=$((skipped + 1))
        return 0
    fi
    local archive=$1 name=$2 context=$work/image/amd64 oci=$work/oci bundle=$work/bundle
    local version source
    version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
    source=$(sed -n 's/^repository = "\(.*\)"/\1/p' Cargo.toml | head -1)
    # publish-image.yml's unpacking, for the one platform built here.
    mkdir -p "$context"
    tar -xzf "$archive" -C "$context" --strip-components=1 "$name/poll" "$name/LICENSE-MIT" "$name/LICENSE-APACHE"
    # Storage of our own, and a policy that accepts the local image (it is pushed to a folder).
    printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$work/policy.json"
    local b=(buildah --root "$work/containers/root" --runroot "$work/containers/run" --storage-driver vfs)
    if ! "${b[@]}" build --quiet --signature-policy "$work/policy.json" --platform linux/amd64 --identity-label=false \
        --build-arg "VERSION=$version" --build-arg "SOURCE=$source" --file Dockerfile --tag localhost/poll:test \
        "$context" >"$work/buildah.log" 2>&1 ||
        ! "${b[@]}" push --quiet --signature-policy "$work/policy.json" localhost/poll:test "oci:$oci:test" >>"$work/buildah.log" 2>&1 ||
        ! umoci unpack --image "$oci:test" "$bundle" >>"$work/buildah.log" 2>&1; then
        echo "FAILED: image: buildah or umoci:" >&2
        tail -20 "$work/buildah.log" | sed 's/^/    /' >&2
        failed=$((failed + 1))
        "${b[@]}" rm --all >/dev/null 2>&1 || true
        return 0
    fi
    # vfs keeps a whole copy of each layer; the OCI layout and the bundle are what the test reads.
    "${b[@]}" rmi --all --force >/dev/null 2>&1 || true
    echo "image: umoci stat:"
    umoci stat --image "$oci:test" | sed 's/^/    /'
    local rootfs=$bundle/rootfs said
    if said=$(python3 - "$oci" "$bundle" "$version" "$source" <<'PY'
import json, os, sys
oci, bundle, version, source = sys.argv[1:]
def blob(digest):
    return os.path.join(oci, "blobs", *digest.split(":"))
index = json.load(open(os.path.join(oci, "index.json")))
manifest_ref = index["manifests"][0]
manifest = json.load(open(blob(manifest_ref["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
problems = []
files = sorted(os.path.relpath(os.path.join(d, f), bundle + "/rootfs") for d, dirs, fs in os.walk(bundle + "/rootfs") for f in dirs + fs)
if files != ["licenses", "licenses/LICENSE-APACHE", "licenses/LICENSE-MIT", "poll"]:
    problems.append("the root holds %s" % files)
c = config["config"]
# buildah, as docker's builders, gives an image FROM scratch the default PATH; nothing else.
path = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
if c.get("Entrypoint") != ["/poll"] or c.get("Cmd") or c.get("User") != "65534:65534" or c.get("Env", path) != path:
    problems.append("the config is %s" % c)
want = {"org.opencontainers.image.source": source, "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": "MIT OR Apache-2.0"}
if c.get("Labels") != want:
    problems.append("the labels are %s" % c.get("Labels"))
if (config["os"], config["architecture"]) != ("linux", "amd64"):
    problems.append("the platform is %s/%s" % (config["os"], config["architecture"]))
# What a pull moves (the manifest, the config, the compressed layers), and what lands on disk.
pulled = manifest_ref["size"] + manifest["config"]["size"] + sum(l["size"] for l in manifest["layers"])
unpacked = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(bundle + "/rootfs") for f in fs)
size = "%d layer(s); %d bytes to pull, %d bytes unpacked" % (len(manifest["layers"]), pulled, unpacked)
if max(pulled, unpacked) >= 10_000_000:
    problems.append("the image is 10 MB or more: " + size)
if problems:
    print("; ".join(problems))
    sys.exit(1)
print(size)
PY
    ); then
        echo "ok: image: /poll, /licenses and nothing else, ENTRYPOINT /poll as 65534, the OCI labels; $said (under 10 MB)"
        passed=$((passed + 1))
    else
        echo "FAILED: image: $said" >&2
        failed=$((failed + 1))
    fi
    if ! cmp -s "$rootfs/poll" "$context/poll"; then
        echo "FAILED: image: its /poll is not the archive's" >&2
        failed=$((failed + 1))
    fi

    # Run as the image would be: its root alone, its user, no environment (so chroot by its path).
    local run=(env -i "$(command -v chroot)" --userspec=65534:65534 "$rootfs" /poll)
    expect "image: /poll --version" 0 "poll $version
" -- "${run[@]}" --version
    get "$base/reset?n=2" >/dev/null
    expect "image: waits on the loopback job server" 0 '{"status":"done","n":2}' -- \
        "${run[@]}" --until '.status=="done"' -i 50ms "$base/job"
    # A CA given with --cacert, from a file put in the root as a volume would put it.
    cp tests/fixtures/cert.pem "$rootfs/ca.pem"
    chmod 644 "$rootfs/ca.pem"
    expect "image: https:// with --cacert" 0 '{"status":"done","n":1}' -- "${run[@]}" --cacert /ca.pem "$tls_url"
    rm "$rootfs/ca.pem"
    expect "image: https:// whose CA is not among the built-in roots" 3 '' -- "${run[@]}" -v --retries 0 "$tls_url"
    if ! grep -q "trusted roots: no system store found; the [0-9]* built-in Mozilla roots serve instead" "$work/err"; then
        echo "FAILED: image: -v does not say that the Mozilla roots serve: $(cat "$work/err")" >&2
        failed=$((failed + 1))
    fi
}

for part in "${parts[@]}"; do
    case $part in
        windows) windows ;;
        musl) musl ;;
        *) echo "tests/windows.sh: no part named $part (windows, musl)" >&2; exit 2 ;;
    esac
done
echo "tests/windows.sh: $passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]

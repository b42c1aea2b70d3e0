#!/usr/bin/env python3
"""Benchmarks of poll against curl (+jq) and Hurl, on a loopback job server.

    python3 benches/bench.py            # full run, prints a Markdown table
    python3 benches/bench.py --quick    # fewer rounds, for a smoke test
    python3 benches/bench.py --several  # 100 URLs at once beside one URL (needs only GNU time)
    python3 benches/bench.py --storm [--poll BIN]  # 50 polls sharing one --state (a file, redis://): a
                                        # brownout and bare 429s, without and with --retry-budget
                                        # 20% and --rate auto (rows whose flag BIN lacks: skipped)
    python3 benches/bench.py --state    # the cost of --state: none, a file, redis://, a cluster (needs only redis-server)
    python3 benches/bench.py --conditional  # a GitHub-like wait: poll, poll --no-conditional, a curl loop (needs curl, jq)
    python3 benches/bench.py --pages [--debug]  # a 200-poll wait on a commit's check runs over 3 pages: requests
                                        # and quota with --paginate, conditional and not (--debug: the
                                        # debug build, which the requests and quota do not depend on)
    python3 benches/bench.py --limits [--before BIN]  # one-shot, tight polling, 1,000 URLs, syscalls
                                        # and instructions per attempt (strace, valgrind when
                                        # installed), beside another build (BIN) in one run
    python3 benches/bench.py --start [--poll BIN]  # --start's server: from its first answer to -- CMD, and from
                                        # its crash to poll's exit, 20 runs each (needs python3; BIN
                                        # defaults to this tree's debug build: the figures are waits)
    python3 benches/bench.py --https [--before BIN]  # one-shot https:// and http:// runs (needs hyperfine),
                                        # beside another build of poll (BIN) when given, then
                                        # paired: BIN and this build alternately, run by run

Needs: Debian's hyperfine, wrk, curl, jq and time (`apt-get install hyperfine wrk curl jq time`);
Hurl is measured when `hurl` is on PATH (see README). `--state` needs only redis-server
(`apt-get install redis-server`, which brings redis-cli), which it starts on free loopback ports
(one node, and a three-master cluster) and stops. `--storm` likewise (one node), with 50 polls.
Only 127.0.0.1 is contacted. The alternatives are interleaved round by round so that
machine noise hits all alike.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

# Server and clients share one CPU. On this kind of VM an idle vCPU takes about
# 80 µs to wake, so a loopback round trip across two CPUs measures the hypervisor
# (wrk: ~11k req/s) rather than the tools (~110k req/s on one CPU).
PIN = ["taskset", "-c", "0"] if shutil.which("taskset") else []

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# cargo builds where CARGO_TARGET_DIR says, as for any other build.
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
POLL = os.path.join(TARGET, "release", "poll")
JOBSERVER = os.path.join(TARGET, "release", "examples", "jobserver")


def need(tools, packages):
    """Ends the benchmark with the install command when one of `tools` is missing."""
    for tool in tools:
        if not shutil.which(tool):
            sys.exit(f"bench: `{tool}` is missing: apt-get install {packages}")


def build():
    subprocess.run(["cargo", "build", "--release", "--bin", "poll", "--example", "jobserver"], cwd=ROOT, check=True)


class JobServer:
    def __enter__(self):
        self.proc = subprocess.Popen([*PIN, JOBSERVER, "0"], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        self.base = "http://" + line.split()[-1]
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()

    def get(self, path):
        with urllib.request.urlopen(self.base + path) as response:
            return json.loads(response.read())

    def reset(self, n):
        self.get(f"/reset?n={n}")


def run_rusage(cmd, **kw):
    """Runs cmd; returns (wall seconds, exit code, rusage)."""
    start = time.perf_counter()
    proc = subprocess.Popen([*PIN, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    _, status, usage = os.wait4(proc.pid, 0)
    return time.perf_counter() - start, os.waitstatus_to_exitcode(status), usage


def tight_polling(server, polls, rounds, hurl_file):
    url = server.base + "/job"
    tools = {
        "poll": [POLL, "--until", '.status=="done"', "--interval", "0", "--timeout", "0", "--retries", "0", url],
        "curl + jq loop": ["bash", "-c", f"until curl -s {url} | jq -e '.status==\"done\"' >/dev/null; do :; done"],
    }
    if hurl_file:
        tools["hurl"] = ["hurl", "--retry", str(polls), "--retry-interval", "0", "--no-output", hurl_file]
    rates = {name: [] for name in tools}
    for _ in range(rounds):
        for name, cmd in tools.items():
            server.reset(polls)
            wall, code, _ = run_rusage(cmd)
            assert code == 0, f"{name} exited {code}"
            done = server.get("/stats")  # sanity: the job really took `polls` requests
            rates[name].append(polls / wall)
    return {name: statistics.median(v) for name, v in rates.items()}


def wrk_limit(server, seconds):
    out = subprocess.run(
        [*PIN, "wrk", "-t1", "-c1", f"-d{seconds}s", server.base + "/ok"], capture_output=True, text=True, check=True
    ).stdout
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def one_shot(server, runs):
    url = server.base + "/ok"
    with tempfile.NamedTemporaryFile(suffix=".json") as export:
        subprocess.run(
            [*PIN, "hyperfine", "-N", "--warmup", "20", "--runs", str(runs), "--export-json", export.name,
             "-n", "poll", f"{POLL} {url}", "-n", "curl", f"curl -s {url}"],
            check=True, stdout=subprocess.DEVNULL,
        )
        results = json.load(open(export.name))["results"]
    return {r["command"]: statistics.median(r["times"]) for r in results}


def peak_rss(cmd, rounds=5):
    """Peak RSS in KiB, measured by GNU time: a child forked from Python would report
    Python's own size, since ru_maxrss survives exec."""
    samples = []
    for _ in range(rounds):
        out = subprocess.run([*PIN, "/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
        samples.append(int(out.stderr.strip().splitlines()[-1]))
    return statistics.median(samples)


def memory(server):
    url = server.base
    polls = lambda n: [POLL, "--until", '.status=="done"', "-i", "0", "--timeout", "0", url + "/job"]
    results = {
        "poll one-shot": peak_rss([POLL, url + "/ok"]),
        "curl one-shot": peak_rss(["curl", "-s", url + "/ok"]),
    }
    for n in (1000, 10000):
        server.reset(n)
        results[f"poll {n} polls"] = peak_rss(polls(n), rounds=1)
    return results


def wait_for_requests(server, count, timeout=10):
    deadline = time.time() + timeout
    while server.get("/stats")["requests"] < count:
        if time.time() > deadline:
            raise RuntimeError("poll never sent its request")
        time.sleep(0.005)


def signal_latency(server, path, rounds):
    """Median ms from SIGINT to exit, with poll waiting (path=/ok, long interval) or mid-request (/hang)."""
    samples = []
    for _ in range(rounds):
        before = server.get("/stats")["requests"]
        cmd = [POLL, "--until", "false", "-i", "60s", "--timeout", "0", "--request-timeout", "120s", server.base + path]
        proc = subprocess.Popen([*PIN, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_requests(server, before + 2)  # its request, plus this /stats call
        time.sleep(0.2)
        sent = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        os.wait4(proc.pid, 0)
        samples.append((time.perf_counter() - sent) * 1000)
    return statistics.median(samples)


def idle_cpu(server, seconds):
    """CPU ms used by a whole run that spends `seconds` waiting between two polls."""
    before = server.get("/stats")["requests"]
    proc = subprocess.Popen(
        [*PIN, POLL, "--until", "false", "-i", "60s", "--timeout", "0", server.base + "/ok"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_for_requests(server, before + 2)
    time.sleep(seconds)
    proc.send_signal(signal.SIGINT)
    _, _, usage = os.wait4(proc.pid, 0)
    return (usage.ru_utime + usage.ru_stime) * 1000


def connections(server, polls):
    server.reset(polls)
    before = server.get("/stats")["connections"]
    run_rusage([POLL, "--until", '.status=="done"', "-i", "0", "--timeout", "0", server.base + "/job"])
    # The /stats calls themselves each open one connection (urllib does not keep-alive).
    return server.get("/stats")["connections"] - before - 1


def child_of(pid):
    """The first child of `pid` (poll, under GNU time), or None before it is forked."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            children = f.read().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def threads_of(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def several_run(server, urls, polls_each, interval, binary=None):
    """`urls` URLs of one origin polled at once until the job is done, about
    `polls_each` polls each: the job server counts the polls of all of them, so
    a target of urls * polls_each is reached after about polls_each rounds."""
    server.reset(urls * polls_each)
    before = server.get("/stats")
    targets = [f"{server.base}/job?u={i}" for i in range(urls)]
    cmd = [binary or POLL, "--until", '.status=="done"', "--interval", interval, "--timeout", "5m", *targets]
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        # GNU time for peak RSS: a child forked from Python would report
        # Python's own size (ru_maxrss survives exec). poll is time's child.
        proc = subprocess.Popen(
            [*PIN, "/usr/bin/time", "-f", "%x %M %e", "-o", timing.name, *cmd],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        pid, peak_threads = None, 0
        while True:
            # wait4's rusage holds poll's CPU to the microsecond (time's own %U %S
            # have 10 ms steps); time itself adds a few hundred µs at most.
            done, _, usage = os.wait4(proc.pid, os.WNOHANG)
            if done:
                break
            pid = pid or child_of(proc.pid)
            if pid:
                peak_threads = max(peak_threads, threads_of(pid))
            time.sleep(0.01)
        code, rss_kib, wall = timing.read().split()
    assert code == "0", f"poll exited {code}"
    after = server.get("/stats")
    # Each /stats call is one request on one connection of its own (urllib does not keep-alive).
    attempts = after["requests"] - before["requests"] - 1
    cpu_ms = (usage.ru_utime + usage.ru_stime) * 1000
    return {
        "urls": urls,
        "interval": interval,
        "attempts": attempts,
        "wall_s": float(wall),
        "rss_mib": int(rss_kib) / 1024,
        "threads": peak_threads,
        "cpu_ms": cpu_ms,
        "cpu_us_per_attempt": cpu_ms * 1000 / attempts,
        "connections": after["connections"] - before["connections"] - 1,
    }


def several_main():
    """100 URLs of one loopback origin at once, beside one URL, at two intervals:
    the same polls with three times the waiting must cost the same CPU per attempt."""
    if not os.path.exists("/usr/bin/time"):
        sys.exit("bench: GNU time is missing: apt-get install time")
    build()
    with JobServer() as server:
        runs = [several_run(server, n, 20, interval) for interval in ("100ms", "300ms") for n in (1, 100)]
        # A thousand URLs polled about 5 times each, once a second.
        runs.append(several_run(server, 1000, 5, "1s"))
    print(f"\ncpus={os.cpu_count()}, {'server and poll pinned to CPU 0' if PIN else 'not pinned (no taskset)'}\n")
    print("| URLs | --interval | attempts | wall | peak RSS | peak threads | CPU | CPU per attempt | connections |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['urls']} | {r['interval']} | {r['attempts']:,} | {r['wall_s']:.2f} s | {r['rss_mib']:.1f} MiB "
              f"| {r['threads']} | {r['cpu_ms']:.1f} ms | {r['cpu_us_per_attempt']:.0f} µs | {r['connections']} |")
    hundred = [r for r in runs if r["urls"] == 100]
    thousand = runs[-1]["rss_mib"]
    print(f"\n1,000 URLs at --interval 1s: peak RSS {thousand:.1f} MiB (goal <= 64 MiB: "
          f"{'met' if thousand <= 64 else 'NOT met'})")
    rss = max(r["rss_mib"] for r in hundred)
    ratio = hundred[1]["cpu_us_per_attempt"] / hundred[0]["cpu_us_per_attempt"]
    print(f"\n100 URLs: peak RSS {rss:.1f} MiB (goal < 20 MiB: {'met' if rss < 20 else 'NOT met'}); "
          f"CPU per attempt at 300ms / at 100ms = {ratio:.2f} (no busy waiting: about 1)")
class RedisServer:
    """A redis-server of the benchmark's own on a free loopback port, pinned like the rest."""

    def __init__(self, extra=()):
        self.extra = list(extra)

    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="poll-bench-redis-")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.proc = subprocess.Popen(
            [*PIN, "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--logfile", os.path.join(self.dir, "redis.log"), *self.extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 10
        while True:
            try:
                self.command("PING")
                break
            except OSError:
                if time.time() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("redis-server did not start")
                time.sleep(0.02)
        self.url = f"redis://127.0.0.1:{self.port}"
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def command(self, *words):
        """One inline command; returns the reply as text (a bulk string's content)."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as conn:
            conn.sendall((" ".join(words) + "\r\n").encode())
            reply = b""
            while not reply.endswith(b"\r\n") or (reply.startswith(b"$") and reply.count(b"\r\n") < 2):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                reply += chunk
        return reply.decode(errors="replace")

    def owns(self, slot):
        """Whether this node serves `slot`, by its own CLUSTER NODES line."""
        mine = next(line for line in self.command("CLUSTER", "NODES").splitlines() if "myself" in line)
        for part in mine.split()[8:]:
            first, _, last = part.partition("-")
            if first.isdigit() and int(first) <= slot <= int(last or first):
                return True
        return False

    def calls(self):
        """{command: (calls, server µs)} since the last CONFIG RESETSTAT, commands run inside
        scripts included (those are not round trips)."""
        stats = re.findall(r"^cmdstat_([^:]+):calls=(\d+),usec=(\d+)", self.command("INFO", "commandstats"), re.M)
        return {name: (int(calls), int(usec)) for name, calls, usec in stats}


class RedisCluster:
    """Three redis-servers with --cluster-enabled yes, joined by redis-cli --cluster create (no replicas),
    pinned like the rest. poll is seeded at a node that does not hold the state key's slot."""

    def __enter__(self):
        self.nodes = []
        try:
            for _ in range(3):
                # The bus port would be the port plus 10,000 (past 65,535 for a free port above 55,535).
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    bus = probe.getsockname()[1]
                node = RedisServer(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                    "--cluster-port", str(bus)])
                self.nodes.append(node.__enter__())
            subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{n.port}" for n in self.nodes],
                            "--cluster-replicas", "0", "--cluster-yes"], check=True, stdout=subprocess.DEVNULL)
            deadline = time.time() + 30
            while not all("cluster_state:ok" in n.command("CLUSTER", "INFO") for n in self.nodes):
                if time.time() > deadline:
                    raise RuntimeError("the cluster is not ok")
                time.sleep(0.05)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc):
        for node in self.nodes:
            node.__exit__()

    def seed_for(self, key):
        """The URL of a node that does not serve `key`'s slot (the state key's hash tag)."""
        slot = int(self.nodes[0].command("CLUSTER", "KEYSLOT", key).strip(":\r\n"))
        owner = next(n for n in self.nodes if n.owns(slot))
        return next(n for n in self.nodes if n is not owner).url

    def command(self, *words):
        for node in self.nodes:
            node.command(*words)

    def calls(self):
        total = {}
        for node in self.nodes:
            for name, (calls, usec) in node.calls().items():
                before = total.get(name, (0, 0))
                total[name] = (before[0] + calls, before[1] + usec)
        return total


# What a client sends on its own (one round trip each); everything else in commandstats ran inside a script.
CLIENT_COMMANDS = ("evalsha", "eval", "script|load", "auth", "select", "hello", "client|setinfo", "ping", "cluster|slots",
                   "asking", "role")


def state_overhead(server, polls, rounds):
    """Tight polling with no --state, with --state FILE, with --state redis:// and with a three-master
    cluster, interleaved: polls per second, and what the state costs per attempt. For Redis also the
    round trips per attempt and the server's own time per script, from its commandstats."""
    url = server.base + "/job"
    folder = tempfile.mkdtemp(prefix="poll-bench-state-")
    results = {}
    try:
        with RedisServer() as redis, RedisCluster() as cluster:
            stores = {"--state redis://": redis, "--state redis:// (cluster)": cluster}
            origin = server.base
            kinds = {
                "no --state": [],
                "--state FILE": ["--state", os.path.join(folder, "api.state")],
                "--state redis://": ["--state", redis.url],
                "--state redis:// (cluster)": ["--state", cluster.seed_for(origin)],
            }
            walls = {kind: [] for kind in kinds}
            cpus = {kind: [] for kind in kinds}
            trips = {kind: [] for kind in stores}
            script_us = {kind: [] for kind in stores}
            for _ in range(rounds):
                for kind, flags in kinds.items():
                    if kind == "--state FILE":
                        for name in os.listdir(folder):
                            os.remove(os.path.join(folder, name))
                    if kind in stores:
                        stores[kind].command("FLUSHALL")
                        stores[kind].command("CONFIG", "RESETSTAT")
                    server.reset(polls)
                    cmd = [POLL, "--until", '.status=="done"', "--interval", "0", "--timeout", "0", "--retries", "0",
                           *flags, url]
                    wall, code, usage = run_rusage(cmd)
                    assert code == 0, f"{kind} exited {code}"
                    walls[kind].append(wall)
                    cpus[kind].append(usage.ru_utime + usage.ru_stime)
                    if kind in stores:
                        calls = stores[kind].calls()
                        trips[kind].append(sum(calls.get(name, (0, 0))[0] for name in CLIENT_COMMANDS) / polls)
                        evalsha = calls.get("evalsha", (1, 0))
                        script_us[kind].append(evalsha[1] / max(evalsha[0], 1))
            for kind, samples in walls.items():
                results[kind] = statistics.median(samples)
                results[kind + " cpu"] = statistics.median(cpus[kind])
            for kind in stores:
                results[kind + " trips"] = statistics.median(trips[kind])
                results[kind + " script_us"] = statistics.median(script_us[kind])
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def state_main(args):
    rounds, polls = (3, 500) if args.quick else (7, 2000)
    need(("redis-server", "redis-cli"), "redis-server")
    build()
    with JobServer() as server:
        results = state_overhead(server, polls, rounds)
    pinned = "job server, redis-server(s) and poll pinned to CPU 0" if PIN else "not pinned (no taskset)"
    print(f"\nrounds={rounds} polls={polls} cpus={os.cpu_count()}, {pinned}\n")
    print("| tight polling, `--interval 0` | polls/s | µs per attempt | state's cost per attempt | poll's own CPU per attempt |")
    print("|---|---|---|---|---|")
    base = results["no --state"] / polls * 1e6
    kinds = ("no --state", "--state FILE", "--state redis://", "--state redis:// (cluster)")
    for kind in kinds:
        per = results[kind] / polls * 1e6
        extra = "-" if kind == "no --state" else f"{per - base:.1f} µs"
        cpu = results[kind + " cpu"] / polls * 1e6
        print(f"| {kind} | {polls / results[kind]:,.0f} | {per:.1f} | {extra} | {cpu:.1f} µs |")
    # Per attempt, to two places: a process's few round trips of its own (CLUSTER SLOTS once, each
    # script's first NOSCRIPT and SCRIPT LOAD) are spread over its 2,000 attempts.
    one, many = "--state redis://", "--state redis:// (cluster)"
    trips, cluster_trips = results[one + " trips"], results[many + " trips"]
    file_cost = results["--state FILE"] - results["no --state"]
    redis_cost = results[one] - results["no --state"]
    one_per, many_per = results[one] / polls * 1e6, results[many] / polls * 1e6
    print()
    print("| goal | figure | met |")
    print("|---|---|---|")
    print(f"| Redis: at most two round trips per attempt | {trips:.2f} round trips per attempt "
          f"(the server's own time: {results[one + ' script_us']:.1f} µs per script) | {'yes' if round(trips, 2) <= 2.0 else '**no**'} |")
    print(f"| Cluster: the round trips of one node | {cluster_trips:.2f} round trips per attempt, summed over the "
          f"three nodes (one node: {trips:.2f}) | {'yes' if f'{cluster_trips:.2f}' == f'{trips:.2f}' else '**no**'} |")
    print(f"| Cluster: the cost per attempt within 20% of one node's | {many_per:.1f} µs vs {one_per:.1f} µs per attempt "
          f"({(many_per / one_per - 1) * 100:+.1f}%) | {'yes' if many_per <= one_per * 1.2 else '**no**'} |")
    print(f"| Redis at least as fast as the file (the Redis server on the same CPU) | {redis_cost / polls * 1e6:.1f} µs vs "
          f"{file_cost / polls * 1e6:.1f} µs per attempt | {'yes' if redis_cost <= file_cost else '**no**'} |")
    redis_cpu, file_cpu = results[one + " cpu"], results["--state FILE cpu"]
    print(f"| poll's own CPU with Redis at most the file's | {redis_cpu / polls * 1e6:.1f} µs vs {file_cpu / polls * 1e6:.1f} µs "
          f"per attempt | {'yes' if redis_cpu <= file_cpu else '**no**'} |")


# The GitHub-like workflow run of the job server (`/gh/...`), waited for as a CI job would.
RUN_PATH = "/gh/repos/octo-org/app/actions/runs/30433642"
UNTIL_COMPLETED = '.status=="completed"'
FAIL_WHEN = '.conclusion != null and .conclusion != "success"'
TOKEN = "ghs_bench"


def conditional_run(server, cmd, polls):
    """One wait for a run that completes at poll `polls`: the server's count of
    requests, 200s (the quota spent), 304s and bytes written, and the client's
    rusage (poll itself, or the shell loop with its curl, jq and sleep children)."""
    server.get(f"/gh/reset?after={polls}")
    wall, code, usage = run_rusage(cmd)
    assert code == 0, f"{cmd[0]} exited {code}"
    stats = server.get("/gh/stats")
    assert stats["requests"] >= polls, stats
    stats["wall_s"] = wall
    stats["cpu_ms"] = (usage.ru_utime + usage.ru_stime) * 1000
    return stats


def conditional_main(args):
    """A wait for a GitHub Actions run through the REST API: poll (conditional by
    default), poll --no-conditional and a curl + jq loop as users write it,
    interleaved round by round; the medians of each figure."""
    rounds, polls = (1, 100) if args.quick else (3, 300)
    need(("curl", "jq"), "curl jq")
    build()
    with JobServer() as server:
        url = server.base + RUN_PATH
        body_bytes = server.get(f"/gh/reset?after={polls}")["body_bytes"]
        auth = f"Authorization: Bearer {TOKEN}"
        poll = [POLL, "--until", UNTIL_COMPLETED, "--fail-when", FAIL_WHEN, "--interval", "10ms", "--timeout", "5m",
                "-H", auth, url]
        loop = (f"while ! curl -s -H '{auth}' {url} | jq -e '{UNTIL_COMPLETED}' >/dev/null; "
                f"do sleep 0.01; done")
        tools = {
            "poll": poll,
            "poll --no-conditional": [*poll[:-1], "--no-conditional", url],
            "curl + jq loop": ["bash", "-c", loop],
        }
        samples = {name: [] for name in tools}
        for _ in range(rounds):
            for name, cmd in tools.items():
                samples[name].append(conditional_run(server, cmd, polls))
        # The same waits at --interval 0: what an attempt costs poll without the sleep and
        # wake-up of a 10 ms wait, beside the tiny body of /job.
        tight = {name: [] for name in ("poll", "poll --no-conditional", "poll, /job's 27-byte body")}
        for _ in range(5):
            for name in tight:
                if name.endswith("body"):
                    server.reset(polls)
                    cmd = [POLL, "--until", '.status=="done"', "--interval", "0", server.base + "/job"]
                    _, code, usage = run_rusage(cmd)
                    assert code == 0, f"poll exited {code}"
                    cpu = usage.ru_utime + usage.ru_stime
                else:
                    cmd = [arg if arg != "10ms" else "0" for arg in tools[name]]
                    cpu = conditional_run(server, cmd, polls)["cpu_ms"] / 1000
                tight[name].append(cpu / polls * 1e6)
    median = lambda name, key: statistics.median(s[key] for s in samples[name])
    changes = samples["poll"][0]["changes"]
    pinned = "server and clients pinned to CPU 0" if PIN else "not pinned (no taskset)"
    print(f"\nrounds={rounds}, the run completes at poll {polls}, its body changes {changes} times "
          f"(queued -> in_progress -> completed), body {body_bytes:,} bytes, --interval 10ms, cpus={os.cpu_count()}, "
          f"{pinned}\n")
    print("| client | requests | quota spent (200s) | 304s | bytes received | bytes per request | CPU per attempt | wall |")
    print("|---|---|---|---|---|---|---|---|")
    for name in tools:
        requests, spent = median(name, "requests"), median(name, "ok")
        received, cpu = median(name, "bytes"), median(name, "cpu_ms")
        who = "" if name.startswith("poll") else " (bash, curl, jq, sleep)"
        print(f"| `{name}` | {requests:,.0f} | {spent:,.0f} | {median(name, 'not_modified'):,.0f} | {received:,.0f} "
              f"| {received / requests:,.0f} | {cpu * 1000 / requests:,.0f} µs{who} | {median(name, 'wall_s'):.2f} s |")
    print()
    print("| `--interval 0`, the same 300 polls | poll's CPU per attempt |")
    print("|---|---|")
    for name, cpus in tight.items():
        print(f"| `{name}` | {statistics.median(cpus):,.0f} µs |")
    spent = median("poll", "ok")
    ratio = median("poll --no-conditional", "bytes") / median("poll", "bytes")
    print()
    print("| goal | figure | met |")
    print("|---|---|---|")
    print(f"| quota spent = body changes + 1 | {spent:.0f} = {changes} + 1 | {'yes' if spent == changes + 1 else '**no**'} |")
    print(f"| bytes received >= 10x fewer than `--no-conditional` | {ratio:.1f}x fewer | {'yes' if ratio >= 10 else '**no**'} |")


# A commit's check runs on the job server, 250 over 3 pages (`/gh/repos/.../check-runs`).
CHECKS_PATH = "/gh/repos/octo-org/app/commits/9f2c4e1/check-runs?per_page=100"
ALL_COMPLETED = 'map(.check_runs[]) | all(.status == "completed")'
ANY_FAILED = 'map(.check_runs[]) | any(.conclusion != null and .conclusion != "success")'


def pages_run(server, cmd, walks, code=0):
    """One wait for the check runs, run 201 completing at walk `walks`: the server's count of
    requests, walks, 200s (the quota spent), 304s and bytes written, and poll's rusage."""
    server.get(f"/gh/checks/reset?after={walks}&conclusion=success")
    wall, got, usage = run_rusage(cmd)
    assert got == code, f"{cmd} exited {got}"
    stats = server.get("/gh/checks/stats")
    stats["wall_s"] = wall
    stats["cpu_ms"] = (usage.ru_utime + usage.ru_stime) * 1000
    return stats


def pages_main(args):
    """A wait for every check run of a commit (issue 51): poll --paginate (conditional by
    default), the same with --no-conditional, and poll judging page 1 alone, interleaved round by
    round; the medians of each figure."""
    global POLL, JOBSERVER
    rounds, walks = (1, 50) if args.quick else (3, 200)
    if args.debug:
        POLL, JOBSERVER = (os.path.join(TARGET, "debug", *p) for p in (["poll"], ["examples", "jobserver"]))
        subprocess.run(["cargo", "build", "--bin", "poll", "--example", "jobserver"], cwd=ROOT, check=True)
    else:
        build()
    with JobServer() as server:
        url = server.base + CHECKS_PATH
        sizes = server.get(f"/gh/checks/reset?after={walks}")["page_bytes"]
        auth = f"Authorization: Bearer {TOKEN}"
        poll = [POLL, "--paginate", "--until", ALL_COMPLETED, "--fail-when", ANY_FAILED, "--interval", "10ms",
                "--timeout", "5m", "-H", auth, url]
        tools = {
            "poll --paginate": poll,
            "poll --paginate --no-conditional": [*poll[:-1], "--no-conditional", url],
            "poll, page 1 alone (no --paginate)": [POLL, "--until", ALL_COMPLETED.replace("map(.check_runs[])", "[.check_runs[]]"),
                                                   "--interval", "10ms", "-H", auth, url],
        }
        samples = {name: [] for name in tools}
        for _ in range(rounds):
            for name, cmd in tools.items():
                samples[name].append(pages_run(server, cmd, walks))
    median = lambda name, key: statistics.median(s[key] for s in samples[name])
    changes = samples["poll --paginate"][0]["changes"]
    pinned = "server and clients pinned to CPU 0" if PIN else "not pinned (no taskset)"
    build_kind = "debug build" if args.debug else "release build"
    print(f"\nrounds={rounds}, 250 check runs over 3 pages of {', '.join(f'{b:,}' for b in sizes)} bytes; run 201 "
          f"(page 3) completes at walk {walks}, so page 3 changes {changes} times (queued -> in_progress -> "
          f"completed) and pages 1 and 2 never; --interval 10ms, {build_kind}, cpus={os.cpu_count()}, {pinned}\n")
    print("| client | walks | requests | quota spent (200s) | 304s | bytes received | CPU per walk | wall | answer |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in tools:
        walked, requests, spent = median(name, "walks"), median(name, "requests"), median(name, "ok")
        answer = "done at walk 1, run 201 still queued: **wrong**" if "alone" in name else f"done at walk {walks}"
        print(f"| `{name}` | {walked:,.0f} | {requests:,.0f} | {spent:,.0f} | {median(name, 'not_modified'):,.0f} "
              f"| {median(name, 'bytes'):,.0f} | {median(name, 'cpu_ms') * 1000 / walked:,.0f} µs "
              f"| {median(name, 'wall_s'):.2f} s | {answer} |")
    spent = median("poll --paginate", "ok")
    print()
    print("| goal | figure | met |")
    print("|---|---|---|")
    print(f"| quota: each page once, then at most 1 per page that changed | {spent:.0f} = 3 pages + {changes} changes "
          f"| {'yes' if spent <= 3 + changes else '**no**'} |")


def https_main(args):
    """One-shot runs: https:// (the roots loaded, a handshake) and http:// (no roots), this build
    and, with --before, another one: hyperfine's runs, then paired runs."""
    need(("hyperfine",), "hyperfine")
    subprocess.run(["cargo", "build", "--release", "--bin", "poll", "--example", "jobserver"], cwd=ROOT, check=True)
    cert = os.path.join(ROOT, "tests", "fixtures", "cert.pem")
    bundle = roots_and(cert)
    try:
        https_runs(args, cert, bundle)
    finally:
        os.unlink(bundle)


def https_runs(args, cert, bundle):
    key = os.path.join(ROOT, "tests", "fixtures", "key.pem")
    runs = 30 if args.quick else 300
    server = os.path.join(ROOT, "tests", "tls_server.py")
    tls = subprocess.Popen([*PIN, sys.executable, server, cert, key], stdout=subprocess.PIPE, text=True)
    try:
        https = f"https://127.0.0.1:{tls.stdout.readline().strip()}/ok"
        with JobServer() as server:
            http = server.base + "/ok"
            builds = [("after", POLL)] + ([("before", args.before)] if args.before else [])
            commands = []
            for name, binary in builds:
                commands += ["-n", f"{name}: https --cacert", f"{binary} --cacert {cert} {https}"]
                commands += ["-n", f"{name}: http", f"{binary} {http}"]
            # `env` costs about a millisecond of its own: compare these three rows with each other.
            # Without --cacert every root is read (as against a public server): one, the bundle's
            # 146 and the CA, or the bundle's folder file by file.
            commands += ["-n", "after: https, CA in SSL_CERT_FILE", f"env SSL_CERT_FILE={cert} {POLL} {https}"]
            commands += ["-n", "after: https, SSL_CERT_FILE = the bundle and the CA",
                         f"env SSL_CERT_FILE={bundle} {POLL} {https}"]
            commands += ["-n", "after: https, CA in SSL_CERT_FILE, SSL_CERT_DIR=/etc/ssl/certs (each file read)",
                         f"env SSL_CERT_FILE={cert} SSL_CERT_DIR=/etc/ssl/certs {POLL} {https}"]
            # The rows above use the system's default store: no SSL_CERT_* of the caller's.
            env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
            with tempfile.NamedTemporaryFile(suffix=".json") as export:
                subprocess.run([*PIN, "hyperfine", "-N", "--warmup", "20", "--runs", str(runs), "--export-json",
                                export.name, *commands], check=True, stdout=subprocess.DEVNULL, env=env)
                results = json.load(open(export.name))["results"]
    finally:
        tls.terminate()
        tls.wait()
    print(f"\nhyperfine -N, {runs} runs each, median (mean ± sd), {os.cpu_count()} cpus\n")
    print("| run | median | mean ± sd |")
    print("|---|---:|---:|")
    for r in results:
        median = statistics.median(r["times"]) * 1000
        print(f"| {r['command']} | {median:.2f} ms | {r['mean'] * 1000:.2f} ± {r['stddev'] * 1000:.2f} ms |")
    if args.before:
        paired_https(args, cert, key, bundle, 100 if args.quick else 1000)


def roots_and(cert):
    """A PEM file of the system's bundle (Debian's place) and `cert`: SSL_CERT_FILE for a run
    that reads every root and still trusts the test server."""
    bundle = tempfile.NamedTemporaryFile("wb", suffix=".pem", delete=False)
    system = "/etc/ssl/certs/ca-certificates.crt"
    if os.path.exists(system):
        bundle.write(open(system, "rb").read())
    bundle.write(open(cert, "rb").read())
    bundle.close()
    return bundle.name


def paired_https(args, cert, key, bundle, pairs):
    """hyperfine runs all of one command, then all of the next, so a machine that slows down
    between them (other work on a shared VM) shows as a difference. Here BIN and this build run
    alternately, the order swapped every pair, and each pair's difference is kept: its median,
    and in how many pairs this build was the slower, say whether it is slower."""
    env = {k: v for k, v in os.environ.items() if k not in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    script = os.path.join(ROOT, "tests", "tls_server.py")
    tls = subprocess.Popen([*PIN, sys.executable, script, cert, key], stdout=subprocess.PIPE, text=True)
    try:
        https = f"https://127.0.0.1:{tls.stdout.readline().strip()}/ok"
        with JobServer() as jobs:
            http = jobs.base + "/ok"
            cases = [
                ("https --cacert", [args.before, "--cacert", cert, https], [POLL, "--cacert", cert, https], {}),
                ("http", [args.before, http], [POLL, http], {}),
                # Before, the Mozilla roots were compiled in; now a run that needs the system's reads them.
                ("https: BIN --cacert; this build reads every root (SSL_CERT_FILE: the bundle and the CA)",
                 [args.before, "--cacert", cert, https], [POLL, https], {"SSL_CERT_FILE": bundle}),
            ]
            rows = []
            for name, before, after, extra in cases:
                def one(cmd, more):
                    start = time.perf_counter()
                    proc = subprocess.Popen([*PIN, *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                            env={**env, **more})
                    _, status, usage = os.wait4(proc.pid, 0)
                    assert os.waitstatus_to_exitcode(status) == 0, f"{cmd} exited {status}"
                    return (time.perf_counter() - start) * 1000, (usage.ru_utime + usage.ru_stime) * 1000
                for _ in range(20):
                    one(before, {}), one(after, extra)
                walls, cpus = {"before": [], "after": []}, {"before": [], "after": []}
                for i in range(pairs):
                    order = [("before", before, {}), ("after", after, extra)]
                    for label, cmd, more in order if i % 2 == 0 else order[::-1]:
                        wall, cpu = one(cmd, more)
                        walls[label].append(wall)
                        cpus[label].append(cpu)
                rows.append((name, walls, cpus))
    finally:
        tls.terminate()
        tls.wait()
    print(f"\nPaired: {pairs} pairs each, alternately, the order swapped every pair; wall and CPU (user + sys)")
    print("per run, medians; difference = this build - BIN, pair by pair\n")
    print("| runs | BIN wall | this wall | difference (median) | this slower in | BIN CPU | this CPU | CPU difference |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, walls, cpus in rows:
        diffs = [a - b for a, b in zip(walls["after"], walls["before"])]
        cpu_diffs = [a - b for a, b in zip(cpus["after"], cpus["before"])]
        slower = sum(1 for d in diffs if d > 0)
        print(f"| {name} | {statistics.median(walls['before']):.2f} ms | {statistics.median(walls['after']):.2f} ms "
              f"| {statistics.median(diffs):+.3f} ms | {slower} of {pairs} | {statistics.median(cpus['before']):.2f} ms "
              f"| {statistics.median(cpus['after']):.2f} ms | {statistics.median(cpu_diffs):+.3f} ms |")


def limits_main(args):
    """The three figures of issue 27, this build beside another (`--before BIN`) in one run:
    a one-shot http:// and https:// GET against curl (hyperfine, interleaved), tight polling
    against wrk's one-connection rate, 1,000 URLs at `--interval 1s` (peak RSS), and the
    system calls and user-space instructions per attempt (strace -c and callgrind, when installed)."""
    need(("hyperfine", "wrk", "curl", "/usr/bin/time"), "hyperfine wrk curl time")
    build()
    builds = [("this build", POLL)] + ([("before", os.path.abspath(args.before))] if args.before else [])
    runs, rounds, polls = (100, 3, 2000) if args.quick else (500, 9, 20000)
    cert = os.path.join(ROOT, "tests", "fixtures", "cert.pem")
    key = os.path.join(ROOT, "tests", "fixtures", "key.pem")
    tls = subprocess.Popen([*PIN, sys.executable, os.path.join(ROOT, "tests", "tls_server.py"), cert, key],
                           stdout=subprocess.PIPE, text=True)
    try:
        https = f"https://127.0.0.1:{tls.stdout.readline().strip()}/ok"
        with JobServer() as server:
            http = server.base + "/ok"
            # One-shot: every command's runs interleaved, hyperfine's median of each.
            shots = {}
            commands = ["-n", "curl http", f"curl -s {http}", "-n", "curl https", f"curl -s --cacert {cert} {https}"]
            for name, binary in builds:
                commands += ["-n", f"{name} http", f"{binary} {http}"]
                commands += ["-n", f"{name} https", f"{binary} --cacert {cert} {https}"]
            for _ in range(rounds):
                with tempfile.NamedTemporaryFile(suffix=".json") as export:
                    subprocess.run([*PIN, "hyperfine", "-N", "--warmup", "5", "--runs", str(runs // rounds),
                                    "--export-json", export.name, *commands], check=True, stdout=subprocess.DEVNULL)
                    for r in json.load(open(export.name))["results"]:
                        shots.setdefault(r["command"], []).extend(r["times"])
            shots = {name: statistics.median(times) * 1000 for name, times in shots.items()}
            # Tight polling: wrk's rate, then each build's, interleaved round by round.
            limit = wrk_limit(server, 2 if args.quick else 5)
            rates = {name: [] for name, _ in builds}
            for _ in range(rounds):
                for name, binary in builds:
                    server.reset(polls)
                    cmd = [binary, "--until", '.status=="done"', "--interval", "0", "--timeout", "0", "--retries",
                           "0", server.base + "/job"]
                    wall, code, _ = run_rusage(cmd)
                    assert code == 0, f"{name} exited {code}"
                    rates[name].append(polls / wall)
            rates = {name: statistics.median(v) for name, v in rates.items()}
            calls = {name: syscalls_per_attempt(server, binary, 2000) for name, binary in builds}
            instructions = {name: instructions_per_attempt(server, binary, 2000) for name, binary in builds}
            # 1,000 URLs, polled about 5 times each at --interval 1s.
            several = {name: several_run(server, 1000, 5, "1s", binary) for name, binary in builds}
    finally:
        tls.terminate()
        tls.wait()
    pinned = "server and poll pinned to CPU 0" if PIN else "not pinned (no taskset)"
    print(f"\nhyperfine runs={runs} ({rounds} rounds), tight polling {polls:,} polls x {rounds} rounds, "
          f"cpus={os.cpu_count()}, {pinned}\n")
    print("| measure | " + " | ".join(name for name, _ in builds) + " | goal |")
    print("|---|" + "---|" * len(builds) + "---|")
    cells = lambda f: " | ".join(f(name) for name, _ in builds)
    print(f"| one-shot http:// GET (curl {shots['curl http']:.2f} ms) | "
          + cells(lambda n: f"{shots[n + ' http']:.2f} ms ({shots[n + ' http'] / shots['curl http']:.2f} of curl)")
          + " | <= 0.33 of curl |")
    print(f"| one-shot https:// GET, --cacert (curl {shots['curl https']:.2f} ms) | "
          + cells(lambda n: f"{shots[n + ' https']:.2f} ms ({shots[n + ' https'] / shots['curl https']:.2f} of curl)")
          + " | no slower |")
    print(f"| tight polling, --interval 0 (wrk -t1 -c1: {limit:,.0f} req/s) | "
          + cells(lambda n: f"{rates[n]:,.0f} polls/s ({rates[n] / limit:.2f} of wrk)") + " | >= 0.75 of wrk |")
    print("| system calls per attempt (strace -c -f, 2,000 polls) | "
          + cells(lambda n: f"{calls[n]:.1f}" if calls[n] else "strace missing") + " | - |")
    print("| user-space instructions per attempt (callgrind, 4,000 less 2,000 polls) | "
          + cells(lambda n: f"{instructions[n]:,.0f}" if instructions[n] else "valgrind missing") + " | - |")
    print("| 1,000 URLs, --interval 1s: peak RSS | "
          + cells(lambda n: f"{several[n]['rss_mib']:.1f} MiB") + " | <= 64 MiB |")
    print("| 1,000 URLs: attempts, wall, peak threads, CPU per attempt | "
          + cells(lambda n: f"{several[n]['attempts']:,}, {several[n]['wall_s']:.2f} s, {several[n]['threads']}, "
                            f"{several[n]['cpu_us_per_attempt']:.0f} µs") + " | about 5,000 in about 5 s |")


def syscalls_per_attempt(server, binary, polls):
    """System calls of a whole tight-polling run (every thread) divided by its attempts;
    None without strace."""
    if not shutil.which("strace"):
        return None
    server.reset(polls)
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        subprocess.run([*PIN, "strace", "-f", "-c", "-o", out.name, binary, "--until", '.status=="done"',
                        "--interval", "0", "--timeout", "0", server.base + "/job"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        total = re.search(r"^\s*100\.00\s+\S+\s+\S+\s+(\d+)", out.read(), re.M)
    return int(total.group(1)) / polls if total else None


def instructions_per_attempt(server, binary, polls):
    """User-space instructions per attempt, counted by callgrind (every thread): a run of
    2 x `polls` less a run of `polls`, divided by `polls`, so start-up and ending cancel out.
    Unlike a rate, the same build gives the same count on any machine. None without valgrind."""
    if not shutil.which("valgrind"):
        return None
    counts = []
    for n in (polls, 2 * polls):
        server.reset(n)
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", binary, "--until",
                              '.status=="done"', "--interval", "0", "--timeout", "0", server.base + "/job"],
                             check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True).stderr
        counts.append(int(re.search(r"Collected : (\d+)", out).group(1)))
    return (counts[1] - counts[0]) / polls


def watch_latency(binary, server, path, extra, after_ms):
    """One run against the job server's rollout, done `after_ms` from the reset: the milliseconds
    from the moment it was done (for a stream, when its done event left the server) to poll's
    exit, and the requests the run sent."""
    server.get(f"/rollout/reset?after={after_ms}")
    proc = subprocess.Popen([*PIN, binary, *extra, "--until", '.status=="done"', server.base + path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(proc.pid, 0)
    exited = time.time_ns()
    assert os.waitstatus_to_exitcode(status) == 0, f"poll exited {status}"
    stats = server.get("/rollout/stats")
    moment = stats["sent_ns"] or stats["done_at_ns"]
    return (exited - moment) / 1e6, stats["requests"]


def watch_main(args):
    """--watch against polling: how late each sees a change, and what a long wait costs."""
    build()
    runs = 10 if args.quick else 50
    wait_s = 10 if args.quick else 60
    modes = [("poll --watch (SSE)", "/rollout/events", ["--watch"]),
             ("poll --interval 1s", "/rollout", ["--interval", "1s"])]
    rows = []
    for name, path, extra in modes:
        with JobServer() as server:
            late = [watch_latency(POLL, server, path, extra, 300)[0] for _ in range(runs)]
            _, requests = watch_latency(POLL, server, path, extra, wait_s * 1000)
        late.sort()
        p99 = late[min(len(late) - 1, int(len(late) * 0.99))]
        rows.append((name, statistics.median(late), p99, requests))
    print(f"\n{runs} runs each (a change 300 ms after the start), then one {wait_s} s wait; {os.cpu_count()} cpus\n")
    print(f"| run | change to exit, p50 | p99 | requests for a {wait_s} s wait |")
    print("|---|---:|---:|---:|")
    for name, p50, p99, requests in rows:
        print(f"| {name} | {p50:.1f} ms | {p99:.1f} ms | {requests} |")


# --storm: 50 processes sharing one --state against the job server's /storm (issue 37).
FLEET = 50
# The fleet is not pinned (the job server and redis-server still are, by their classes). PIN is
# for round trips of microseconds, where an idle vCPU's 80 µs wake-up would be measured; here
# each process sleeps a second between polls and the figures are counts of requests over tens
# of seconds, which a wake-up of 80 µs does not move. Fifty processes, the server and Redis on
# one CPU would instead queue every wake-up behind the others' and behind whatever else runs
# on CPU 0 (another engineer's build), stretching the intervals the counts depend on. Spread
# over both CPUs the whole of a --storm (fleets, job server and Redis) used 6.6 s of CPU in its
# 3 min 49 s, about 3% of one.
STORM_BASE = ["--interval", "1s", "--until", "false", "--retries", "1000", "--breaker-min-success", "0%"]


def storm_supports(binary, server, folder, flags):
    """Whether `binary` takes `flags` (with --state): one short run against /ok, where a build
    without them stops at once with a usage error, exit 2 (any other end counts as taking them:
    the fleet's own flags with `--until false` end at the 2 s deadline, exit 1). Returns
    (True, "") or (False, poll's first line)."""
    state = os.path.join(folder, "probe.state")
    out = subprocess.run([binary, "--state", state, *flags, "--timeout", "2s", server.base + "/ok"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if out.returncode != 2:
        return True, ""
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    return False, f"exit 2: {lines[0] if lines else 'nothing on stderr'}"


class Fleet:
    """`FLEET` polls of one command line, started evenly over one --interval (20 ms apart, as
    independent jobs start, not all in the same millisecond), each with its stderr in a file of
    its own. `--timeout` is the run's length plus 30 s, so that a fleet the harness lost still
    ends by itself; on leaving, each poll still running gets SIGINT, then SIGKILL after 5 s."""

    def __init__(self, binary, state, url, extra, seconds, folder):
        self.cmd = [binary, "--state", state, *STORM_BASE, *extra, "--timeout", f"{int(seconds) + 30}s", url]
        self.folder = folder

    def __enter__(self):
        self.procs, self.logs = [], []
        try:
            for i in range(FLEET):
                log = open(os.path.join(self.folder, f"poll-{i}.stderr"), "w+")
                self.logs.append(log)
                self.procs.append(subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=log))
                time.sleep(1 / FLEET)
        except BaseException:
            self.__exit__()
            raise
        return self

    def exited(self):
        """The polls that ended on their own so far: [(index, exit code, last line of stderr)]."""
        ended = []
        for i, proc in enumerate(self.procs):
            if proc.poll() is not None:
                self.logs[i].seek(0)
                lines = [line.strip() for line in self.logs[i] if line.strip()]
                ended.append((i, proc.returncode, lines[-1] if lines else ""))
        return ended

    def __exit__(self, *exc):
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        deadline = time.time() + 5
        for proc in self.procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for log in self.logs:
            log.close()


def storm_stats(server):
    """/storm's counts since its last reset, and the seconds since then."""
    return server.get("/storm/stats")


def storm_until(start, seconds):
    """Sleeps until `seconds` after `start` (time.monotonic())."""
    time.sleep(max(0.0, start + seconds - time.monotonic()))


def storm_brownout(binary, server, state, extra, times, folder):
    """One fleet: warm up on a healthy /storm, count `healthy` seconds, switch to the brownout,
    let it settle (the retry budget's 10 s window then holds only brownout requests), count
    `brownout` seconds. Returns the two /storm/stats and the polls that ended early."""
    warm, healthy, settle, brownout = times
    server.get("/storm/reset?mode=healthy")
    with Fleet(binary, state, server.base + "/storm", extra, warm + healthy + settle + brownout + 1, folder) as fleet:
        time.sleep(warm)
        start = time.monotonic()
        server.get("/storm/reset")
        storm_until(start, healthy)
        calm = storm_stats(server)
        server.get("/storm/reset?mode=brownout")
        storm_until(start, healthy + settle)
        server.get("/storm/reset")
        storm_until(start, healthy + settle + brownout)
        storm = storm_stats(server)
        early = fleet.exited()
    return {"healthy": calm, "brownout": storm, "early": early}


def storm_limit(binary, server, state, extra, times, folder):
    """One fleet: warm up on a healthy /storm, then the limit of 10 requests a wall-clock second
    from t = 0, read at `middle` and `end` seconds. Returns both /storm/stats and the early exits."""
    warm, middle, end = times
    server.get("/storm/reset?mode=healthy")
    with Fleet(binary, state, server.base + "/storm", extra, warm + end + 1, folder) as fleet:
        time.sleep(warm)
        start = time.monotonic()
        server.get("/storm/reset?mode=limit&limit=10")
        storm_until(start, middle)
        first = storm_stats(server)
        storm_until(start, end)
        whole = storm_stats(server)
        early = fleet.exited()
    return {"first": first, "whole": whole, "early": early}


def storm_window(before, after):
    """/storm's counts between two /storm/stats of one reset: (seconds, requests, ok, limited)."""
    keys = ("seconds", "requests", "ok", "limited")
    return tuple(after[k] - before[k] for k in keys)


def storm_main(args):
    """Issue 37's fleet: 50 polls sharing one --state (a file; one redis-server node), against a
    brownout (every other request a 503) and a bare-429 limit of 10 requests a second, without and
    with --retry-budget 20% and --rate auto. A row whose flag the build lacks is reported skipped."""
    need(("redis-server", "redis-cli"), "redis-server")
    build()
    binary = os.path.abspath(args.poll) if args.poll else POLL
    # (warm-up, healthy, settle, brownout) and (warm-up, middle, end), in seconds.
    brown_times, limit_times = ((2, 5, 5, 5), (2, 10, 20)) if args.quick else ((3, 15, 10, 20), (3, 30, 60))
    folder = tempfile.mkdtemp(prefix="poll-bench-storm-")
    rows, notes = [], []
    try:
        with JobServer() as server, RedisServer() as redis:
            base_ok, why = storm_supports(binary, server, folder, STORM_BASE)
            if not base_ok:
                sys.exit(f"bench: {binary} refuses the fleet's flags ({' '.join(STORM_BASE)}): {why}")
            configs = [("brownout", "no flag", []), ("brownout", "--retry-budget 20%", ["--retry-budget", "20%"]),
                       ("bare 429s", "no flag", []), ("bare 429s", "--rate auto", ["--rate", "auto"])]
            if args.storm_only:
                configs = [config for config in configs if config[0] == args.storm_only]
            runs = 0
            for case, name, extra in configs:
                supported, why = storm_supports(binary, server, folder, extra) if extra else (True, "")
                for store in ("file", "redis"):
                    if not supported:
                        rows.append((case, name, store, None, why))
                        if store == "file":
                            notes.append(f"{name}: skipped, {binary} refused it ({why}); `--poll BIN` runs it")
                        continue
                    if store == "file":
                        state = os.path.join(folder, f"fleet-{runs}.state")
                    else:
                        redis.command("FLUSHALL")
                        state = redis.url
                    runs += 1
                    run = storm_brownout if case == "brownout" else storm_limit
                    times = brown_times if case == "brownout" else limit_times
                    result = run(binary, server, state, extra, times, folder)
                    rows.append((case, name, store, result, ""))
                    for i, code, last in result["early"]:
                        notes.append(f"{case}, {name}, {store}: poll {i} exited {code} early: {last}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    warm, healthy, settle, brownout = brown_times
    print(f"\n{FLEET} polls sharing one --state ({' '.join(STORM_BASE)}), started 20 ms apart and warmed up "
          f"{warm} s on a healthy server; poll: {binary}; cpus={os.cpu_count()}, job server and redis-server pinned "
          f"to CPU 0, the polls not pinned\n")
    print(f"Brownout: {healthy} s healthy, then every other request a 503; {settle} s to settle, then {brownout} s "
          f"counted. Bare 429s: at most 10 requests a wall-clock second, the rest a bare 429, from t = 0 for "
          f"{limit_times[2]} s; figures over {limit_times[1]}-{limit_times[2]} s (the whole run in brackets).\n")
    print("| case | config | store | requests/s | amplification or 429 share | successes/s | goal | met |")
    print("|---|---|---|---|---|---|---|---|")
    for case, name, store, result, why in rows:
        goal = "amplification <= 1.2" if case == "brownout" else "<= 5% 429s, >= 9 successes/s"
        if result is None:
            print(f"| {case} | {name} | {store} | skipped: this poll lacks the flag | | | {goal} | - |")
            continue
        alive = f" ({len(result['early'])} of {FLEET} polls exited early)" if result["early"] else ""
        if case == "brownout":
            calm, storm = result["healthy"], result["brownout"]
            calm_rate, storm_rate = calm["requests"] / calm["seconds"], storm["requests"] / storm["seconds"]
            amplification = storm_rate / calm_rate
            ok_rate = storm["ok"] / storm["seconds"]
            met = amplification <= 1.2
            print(f"| {case} | {name} | {store} | {calm_rate:.1f} healthy, {storm_rate:.1f} in the brownout{alive} "
                  f"| {amplification:.2f} | {ok_rate:.1f} | {goal} | {'yes' if met else '**no**'} |")
        else:
            late = storm_window(result["first"], result["whole"])
            whole = storm_window({k: 0 for k in ("seconds", "requests", "ok", "limited")}, result["whole"])
            rate = lambda w: w[1] / w[0]
            share = lambda w: w[3] / max(w[1], 1)
            ok = lambda w: w[2] / w[0]
            met = share(late) <= 0.05 and ok(late) >= 9
            print(f"| {case} | {name} | {store} | {rate(late):.1f} ({rate(whole):.1f}){alive} "
                  f"| {share(late):.1%} 429s ({share(whole):.1%}) | {ok(late):.1f} ({ok(whole):.1f}) | {goal} "
                  f"| {'yes' if met else '**no**'} |")
    for note in notes:
        print(f"\n- {note}")


# --start's server in the benchmark: it binds its port after a random pause (so that it comes up
# anywhere between two polls), writes the time it bound and the time it sent its first 200 to
# files, and serves until it is stopped. Times are epoch seconds, as `date +%s.%N` writes them.
START_SERVER = r"""
import os, random, socket, sys, time
port, folder = int(sys.argv[1]), sys.argv[2]
time.sleep(random.uniform(0.2, 0.7))
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(16)
open(os.path.join(folder, "bound"), "w").write(repr(time.time()))
first = True
while True:
    c, _ = s.accept()
    c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
    if first:
        open(os.path.join(folder, "answered"), "w").write(repr(time.time()))
        first = False
    c.close()
"""


def free_port():
    """A loopback port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_main(args):
    """--start: the first answer to -- CMD, and the crash to poll's exit, over 20 runs each."""
    binary = os.path.abspath(args.poll) if args.poll else os.path.join(TARGET, "debug", "poll")
    if not args.poll:
        subprocess.run(["cargo", "build", "--quiet"], cwd=ROOT, check=True)
    runs = 5 if args.quick else 20
    interval = 0.25
    answer_to_cmd, bound_to_cmd, crash_to_exit = [], [], []
    with tempfile.TemporaryDirectory(prefix="poll-bench-start-") as folder:
        server = os.path.join(folder, "server.py")
        with open(server, "w") as f:
            f.write(START_SERVER)
        for _ in range(runs):
            for name in ("bound", "answered", "cmd", "crashed"):
                if os.path.exists(os.path.join(folder, name)):
                    os.remove(os.path.join(folder, name))
            port = free_port()
            start = f"exec python3 {server} {port} {folder}"
            cmd = ["sh", "-c", f"date +%s.%N > {folder}/cmd"]
            subprocess.run([binary, "--start", start, "-i", f"{int(interval * 1000)}ms", "--timeout", "30s",
                            f"http://127.0.0.1:{port}/health", "--", *cmd], check=True,
                           stderr=subprocess.DEVNULL)
            read = lambda name: float(open(os.path.join(folder, name)).read())
            answer_to_cmd.append(read("cmd") - read("answered"))
            bound_to_cmd.append(read("cmd") - read("bound"))
            # A server that dies 0.2-0.7 s after it starts, the moment written just before it exits.
            port = free_port()
            crash = (f"sleep 0.$(( $$ % 5 + 2 )); date +%s.%N > {folder}/crashed; exit 1")
            proc = subprocess.run([binary, "--start", crash, "-i", "1s", "--timeout", "30s",
                                   f"http://127.0.0.1:{port}/health", "--", "true"], stderr=subprocess.DEVNULL)
            ended = time.time()
            assert proc.returncode == 3, proc.returncode
            crash_to_exit.append(ended - read("crashed"))
    ms = lambda values: [v * 1000 for v in values]
    def row(what, values, goal, met):
        values = sorted(ms(values))
        median, worst = statistics.median(values), values[-1]
        print(f"| {what} | {median:.1f} ms | {values[int(len(values) * 0.9) - 1]:.1f} ms | {worst:.1f} ms | {goal} | "
              f"{'yes' if met(worst) else '**no**'} |")
    print(f"{runs} runs each, `--interval {int(interval * 1000)}ms`, {binary}\n")
    print("| measure | median | p90 | max | goal | met |")
    print("|---|---:|---:|---:|---|---|")
    row("the server's first answer to `-- CMD` starting", answer_to_cmd, "-", lambda worst: True)
    row("the server's port bound to `-- CMD` starting (the answer seen)", bound_to_cmd,
        f"within `--interval` ({int(interval * 1000)} ms) plus the answer's way", lambda worst: worst < interval * 1000 + 50)
    row("the server's crash to poll's exit (exit 3)", crash_to_exit, "< 100 ms", lambda worst: worst < 100)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--several", action="store_true", help="only the several-URLs measurement")
    parser.add_argument("--state", action="store_true", help="only the cost of --state (file and redis://)")
    parser.add_argument("--conditional", action="store_true", help="only the GitHub-like wait: quota and bytes")
    parser.add_argument("--https", action="store_true", help="only one-shot https:// and http:// runs")
    parser.add_argument("--pages", action="store_true", help="only --paginate: a wait on a 3-page collection")
    parser.add_argument("--debug", action="store_true", help="with --pages: the debug build")
    parser.add_argument("--limits", action="store_true",
                        help="only issue 27's figures: one-shot, tight polling, 1,000 URLs, syscalls")
    parser.add_argument("--watch", action="store_true",
                        help="only --watch against polling: change-to-exit latency and a long wait's requests")
    parser.add_argument("--storm", action="store_true",
                        help="only issue 37's fleet: 50 polls sharing one --state in a brownout and under bare 429s")
    parser.add_argument("--before", help="with --https or --limits: another build of poll to compare with")
    parser.add_argument("--poll", help="with --storm: the poll to run (default: this tree's release build)")
    parser.add_argument("--start", action="store_true",
                        help="only --start: its server's first answer to -- CMD, and its crash to poll's exit")
    parser.add_argument("--storm-only", choices=["brownout", "bare 429s"], help="with --storm: one case only")
    args = parser.parse_args()
    if args.start:
        return start_main(args)
    if args.storm:
        return storm_main(args)
    if args.watch:
        return watch_main(args)
    if args.https:
        return https_main(args)
    if args.limits:
        return limits_main(args)
    if args.conditional:
        return conditional_main(args)
    if args.pages:
        return pages_main(args)
    if args.several:
        return several_main()
    if args.state:
        return state_main(args)
    rounds, polls, runs = (1, 500, 30) if args.quick else (5, 2000, 300)
    need(("hyperfine", "wrk", "curl", "jq", "/usr/bin/time"), "hyperfine wrk curl jq time")
    build()
    hurl_file = None
    if shutil.which("hurl"):
        hurl_file = tempfile.NamedTemporaryFile("w", suffix=".hurl", delete=False)
    with JobServer() as server:
        if hurl_file:
            hurl_file.write(f'GET {server.base}/job\nHTTP 200\n[Asserts]\njsonpath "$.status" == "done"\n')
            hurl_file.close()
            hurl_file = hurl_file.name
        limit = wrk_limit(server, 2 if args.quick else 5)
        rates = tight_polling(server, polls, rounds, hurl_file)
        shots = one_shot(server, runs)
        rss = memory(server)
        cpu = idle_cpu(server, 5)
        sig_wait = signal_latency(server, "/ok", 3 if args.quick else 10)
        sig_flight = signal_latency(server, "/hang", 3 if args.quick else 10)
        conns = connections(server, 1000)

    def row(what, value, goal, met):
        print(f"| {what} | {value} | {goal} | {'yes' if met else '**no**'} |")

    pinned = "server and clients pinned to CPU 0" if PIN else "not pinned (no taskset)"
    print(f"\nrounds={rounds} polls={polls} hyperfine runs={runs} cpus={os.cpu_count()}, {pinned}\n")
    print("| measure | figure | goal | met |")
    print("|---|---|---|---|")
    print(f"| job server, one connection (wrk -t1 -c1) | {limit:,.0f} req/s | > 50,000 req/s | {'yes' if limit > 50000 else '**no**'} |")
    p = rates["poll"]
    row("tight polling: poll", f"{p:,.0f} polls/s ({p / limit:.0%} of the one-connection limit)", ">= 50% of the limit", p >= limit / 2)
    c = rates["curl + jq loop"]
    print(f"| tight polling: curl + jq loop | {c:,.0f} polls/s (poll is {p / c:.1f}x) | - | - |")
    if "hurl" in rates:
        h = rates["hurl"]
        row("tight polling: hurl", f"{h:,.0f} polls/s (poll is {p / h:.1f}x)", "poll >= 2x hurl", p >= 2 * h)
    else:
        print("| tight polling: hurl | not installed | poll >= 2x hurl | - |")
    ps, cs = shots["poll"] * 1000, shots["curl"] * 1000
    row("one-shot wall time (hyperfine median)", f"poll {ps:.2f} ms, curl {cs:.2f} ms ({ps / cs:.0%})", "<= 50% of curl", ps <= cs / 2)
    row("peak RSS, one-shot", f"poll {rss['poll one-shot'] / 1024:.1f} MiB, curl {rss['curl one-shot'] / 1024:.1f} MiB",
        "<= 50% of curl", rss["poll one-shot"] <= rss["curl one-shot"] / 2)
    flat = rss["poll 10000 polls"] <= rss["poll 1000 polls"] + 512
    row("peak RSS, 1,000 vs 10,000 polls", f"{rss['poll 1000 polls'] / 1024:.1f} MiB vs {rss['poll 10000 polls'] / 1024:.1f} MiB", "flat", flat)
    row("CPU for a run with a 5 s wait", f"{cpu:.1f} ms", "< 5 ms", cpu < 5)
    row("SIGINT to exit, during a wait", f"{sig_wait:.2f} ms", "< 5 ms", sig_wait < 5)
    row("SIGINT to exit, request in flight", f"{sig_flight:.2f} ms", "< 5 ms", sig_flight < 5)
    row("TCP connections for 1,000 polls", f"{conns}", "1", conns == 1)


if __name__ == "__main__":
    main()

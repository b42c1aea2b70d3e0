#!/usr/bin/env python3
"""What a token refresh costs: `poll --auth-cmd` runs whose first attempt is answered
200 (one command run, one request) against runs whose first attempt gets a 401 (the
command runs again and the attempt is sent again at once), on the loopback job server.

    cargo build --release --bin poll --example jobserver
    python3 benches/refresh.py [ROUNDS]

The two kinds of run are interleaved round by round; the figures are medians of the
wall time of whole `poll` processes. Only 127.0.0.1 is contacted.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLL = os.path.join(ROOT, "target", "release", "poll")
JOBSERVER = os.path.join(ROOT, "target", "release", "examples", "jobserver")


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    server = subprocess.Popen([JOBSERVER, "0"], stdout=subprocess.PIPE, text=True)
    try:
        base = "http://" + server.stdout.readline().split()[-1]
        post = urllib.request.Request(base + "/app/installations/1/access_tokens", method="POST")
        with urllib.request.urlopen(post) as reply:
            token = json.loads(reply.read())["token"]
        with tempfile.TemporaryDirectory() as scratch:
            good = os.path.join(scratch, "good")
            stale = os.path.join(scratch, "stale")
            with open(good, "w") as f:
                f.write(token)
            # Prints a refused token on its first run, the good one after: the first attempt gets a 401.
            refresh_cmd = f"if [ -e '{stale}' ]; then rm '{stale}'; echo stale-token; else cat '{good}'; fi"
            plain_cmd = f"cat '{good}'"
            url = base + "/private/job"
            with urllib.request.urlopen(base + "/reset?n=1"):
                pass
            times = {"plain": [], "refresh": []}
            for _ in range(rounds):
                for kind, cmd in (("plain", plain_cmd), ("refresh", refresh_cmd)):
                    if kind == "refresh":
                        open(stale, "w").close()
                    started = time.perf_counter()
                    done = subprocess.run([POLL, "--auth-cmd", cmd, url], stdout=subprocess.DEVNULL)
                    times[kind].append(time.perf_counter() - started)
                    assert done.returncode == 0, kind
            with urllib.request.urlopen(base + "/stats") as reply:
                stats = json.loads(reply.read())
        assert stats["refused"] == rounds, stats
        plain, refresh = statistics.median(times["plain"]), statistics.median(times["refresh"])
        print(f"rounds: {rounds}; 401s seen by the server: {stats['refused']}")
        print(f"run, first attempt 200:  median {plain * 1000:.2f} ms")
        print(f"run, first attempt 401:  median {refresh * 1000:.2f} ms")
        print(f"cost of one refresh:     {(refresh - plain) * 1000:.2f} ms (one more command run + one more request)")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""P8: a spool with JOBS finished jobs (default 1,000,000: 90 % in done/, 10 % in failed/, one
record pair each, finished one second apart) and the filing journal an agent would have written
for the newest of them. Measures, on a warm cache:
  - `dropfetch status` and `status --json` (median of 5), and once `status` with the journals gone
    (the full scan the journal replaces);
  - agent start-up with that history: from exec to the "agent started" line, and the start-up
    retention pass (history: max_jobs JOBS-1000, so it reads every record and removes 1000): its
    time and the longest loop turn meanwhile (dropfetch_loop_stall_seconds of the metrics file);
  - `dropfetch purge --keep-jobs` removing PURGE records (default 900,000): wall and CPU time.
Environment: DROPFETCH (binary), WORK (an empty folder), JOBS, PURGE. Prints one line: `P8 key=value ...`."""
import os, resource, signal, statistics, subprocess, sys, time

N = int(os.environ.get("JOBS", "1000000"))
PURGE = int(os.environ.get("PURGE", str(N * 9 // 10)))
BIN = os.environ["DROPFETCH"]
root = os.environ["WORK"]
spool = f"{root}/spool"
config = f"{root}/config.yaml"
log = lambda *a: print("p8:", *a, file=sys.stderr, flush=True)

for d in ["inbox", "hold", "work", "done", "failed", "../downloads"]:
    os.makedirs(f"{spool}/{d}", exist_ok=True)


def write_config(extra=""):
    with open(config, "w") as f:
        f.write(f"spool: {spool}\ndestination: {root}/downloads\nagent_id: bench\nfsync: false\nscan_interval: 0\n"
                f"metrics_file: {root}/metrics.prom\nlog_level: info\n{extra}")


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


now = int(time.time())
t0 = time.time()
journal_from = max(0, N - 6000)
lines = []
for i in range(N):
    folder = "failed" if i % 10 == 9 else "done"
    name = f"j{i:07d}"
    finished = now - (N - i)
    state = "failed" if folder == "failed" else "done"
    error = '{\n    "kind": "http_status",\n    "message": "HTTP 404"\n  }' if state == "failed" else "null"
    status = (f'{{\n  "schema": 1,\n  "job": "{name}.url",\n  "state": "{state}",\n  "class": "default",\n'
              f'  "priority": 0,\n  "agent": "bench",\n  "submitted": "{stamp(finished - 2)}",\n'
              f'  "started": "{stamp(finished - 1)}",\n  "finished": "{stamp(finished)}",\n  "attempts": 1,\n'
              f'  "downloads": [\n    {{\n      "url": "http://127.0.0.1:9/{name}.bin",\n'
              f'      "file": "{root}/downloads/{name}.bin",\n      "state": "{state}",\n      "bytes": 16384,\n'
              f'      "http_status": 200,\n      "resumed_from": 0,\n      "sha256": null,\n      "seconds": 0.01,\n'
              f'      "error": null,\n      "connections": 1,\n      "fetched": 16384\n    }}\n  ],\n'
              f'  "error": {error}\n}}\n')
    fd = os.open(f"{spool}/{folder}/{name}.status.json", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, status.encode())
    os.close(fd)
    os.utime(f"{spool}/{folder}/{name}.status.json", ns=(finished * 10**9, finished * 10**9))
    fd = os.open(f"{spool}/{folder}/{name}.url", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, f"http://127.0.0.1:9/{name}.bin\n".encode())
    os.close(fd)
    if i >= journal_from:
        lines.append(f"{finished * 10**9} {'f' if folder == 'failed' else 'd'} {name}.url\n")
    if i and i % 100000 == 0:
        log(f"{i} records written ({time.time() - t0:.0f} s)")
# Two generations, as the agent's rotation leaves them.
half = len(lines) // 2
for suffix, part in [(".1", lines[:half]), ("", lines[half:])]:
    with open(f"{spool}/.filings.bench{suffix}", "w") as f:
        f.write("dropfetch-filings 1\n" + "".join(part))
log(f"{N} records written in {time.time() - t0:.0f} s")
write_config()


def timed(args):
    started = time.perf_counter()
    result = subprocess.run([BIN] + args + ["--config", config], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if result.returncode != 0:
        sys.exit(f"p8: {args} exited {result.returncode}: {result.stderr.decode()[-500:]}")
    return (time.perf_counter() - started) * 1000, result.stdout


def median_ms(args, runs=5):
    timed(args)  # warm
    return statistics.median(timed(args)[0] for _ in range(runs))


status_ms = median_ms(["status"])
status_json_ms = median_ms(["status", "--json"])
log(f"status {status_ms:.1f} ms, status --json {status_json_ms:.1f} ms")
# The scan the journal replaces, once, for comparison.
for suffix in ["", ".1"]:
    os.rename(f"{spool}/.filings.bench{suffix}", f"{root}/filings{suffix}")
scan_ms, _ = timed(["status"])
for suffix in ["", ".1"]:
    os.rename(f"{root}/filings{suffix}", f"{spool}/.filings.bench{suffix}")
log(f"status by full scan {scan_ms:.0f} ms")

# Agent start-up with that history; its start-up pass reads every record and removes 1000.
write_config(f"history: {{ max_jobs: {N - 1000} }}\n")
agent_log = open(f"{root}/agent.log", "w")
started = time.perf_counter()
agent = subprocess.Popen([BIN, "run", "--config", config], stdout=agent_log, stderr=agent_log)
startup_ms = pass_s = None
deadline = time.time() + 900
while time.time() < deadline and agent.poll() is None:
    text = open(f"{root}/agent.log").read()
    if startup_ms is None and "agent started" in text:
        startup_ms = (time.perf_counter() - started) * 1000
    if "history: removed" in text:
        pass_s = time.perf_counter() - started
        break
    time.sleep(0.005)
time.sleep(1.5)  # the metrics file is written at most once a second
stall_ms = None
try:
    for line in open(f"{root}/metrics.prom"):
        if line.startswith("dropfetch_loop_stall_seconds"):
            stall_ms = float(line.split()[-1]) * 1000
except FileNotFoundError:
    pass
agent.send_signal(signal.SIGTERM)
agent.wait(timeout=60)
log(f"start-up {startup_ms} ms, start-up pass {pass_s} s, longest loop turn {stall_ms} ms")

remaining = N - 1000
write_config()
before = resource.getrusage(resource.RUSAGE_CHILDREN)
purge_ms, out = timed(["purge", "--keep-jobs", str(remaining - PURGE), "--json"])
after = resource.getrusage(resource.RUSAGE_CHILDREN)
purge_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
log(f"purge: {out.decode().strip()} in {purge_ms / 1000:.1f} s (CPU {purge_cpu:.1f} s)")
after_ms = median_ms(["status"])
print(f"P8 jobs={N} status_ms={status_ms:.1f} status_json_ms={status_json_ms:.1f} scan_ms={scan_ms:.0f} "
      f"startup_ms={startup_ms:.0f} startup_pass_s={pass_s:.1f} stall_ms={stall_ms} purged={PURGE} "
      f"purge_s={purge_ms / 1000:.1f} purge_cpu_s={purge_cpu:.1f} status_after_ms={after_ms:.1f}")

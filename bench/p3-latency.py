#!/usr/bin/env python3
"""P3: latency from a job's rename into the inbox of a running dropfetch daemon to the server
receiving its request, over DROPS drops (default 200): p50, p99 and max in ms.

With LOAD=M the daemon first gets M small jobs from the bench's nginx (LOAD_BASE, the names in
LOAD_NAMES, 16 per host) and the drops go to a second server on 127.0.0.2 with free slots: the
figure then shows how long the event loop stalls while it files thousands of jobs. Drops are made
only while the load still runs.

Environment: DROPFETCH (binary), WORK (an empty folder: the spool and downloads go there),
DROPS (200), LOAD (0), LOAD_BASE (http://127.0.0.1:PORT), LOAD_NAMES (a file, one name under
LOAD_BASE/small/ a line). Prints one line: `P3 key=value ...`; details go to stderr."""
import http.server, os, socketserver, subprocess, sys, threading, time

N = int(os.environ.get("DROPS", "200"))
LOAD = int(os.environ.get("LOAD", "0"))
BIN = os.environ["DROPFETCH"]
root = os.environ["WORK"]
seen = {}


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        seen.setdefault(self.path, time.time())
        body = b"x" * 1024
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


host = "127.0.0.2" if LOAD else "127.0.0.1"
srv = Server((host, 0), Handler)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()
cfg = os.path.join(root, "cfg.yaml")
with open(cfg, "w") as f:
    f.write(f"spool: {root}/spool\ndestination: {root}/dl\nlog_level: warning\nscan_interval: 0\n"
            "concurrency: { total: 32, per_host: 16 }\n")
agent = subprocess.Popen([BIN, "run", "--config", cfg], stderr=subprocess.DEVNULL)
inbox = f"{root}/spool/inbox"
deadline = time.time() + 10
while not os.path.isdir(inbox) and time.time() < deadline:
    time.sleep(0.01)
time.sleep(1.0)
if LOAD:
    names = open(os.environ["LOAD_NAMES"]).read().split()
    base = os.environ["LOAD_BASE"]
    for i in range(LOAD):
        tmp = f"{inbox}/.load{i}.tmp"
        with open(tmp, "w") as f:
            f.write(f"{base}/small/{names[i % len(names)]}\n  out=l{i}.bin\n")
        os.rename(tmp, f"{inbox}/load{i}.url")
lat = []
loaded = LOAD > 0
for i in range(N):
    if loaded and i % 10 == 0:
        # Each filed job leaves two files in done/: its job file and its status file.
        loaded = sum(1 for n in os.listdir(f"{root}/spool/done") if n.startswith("load")) < 2 * LOAD
    if LOAD and not loaded:
        break
    tmp = f"{inbox}/.j{i}.tmp"
    with open(tmp, "w") as f:
        f.write(f"http://{host}:{port}/f{i}\n")
    t0 = time.time()
    os.rename(tmp, f"{inbox}/j{i}.url")
    while f"/f{i}" not in seen and time.time() - t0 < 5:
        time.sleep(0.0005)
    if f"/f{i}" in seen:
        lat.append((seen[f"/f{i}"] - t0) * 1000)
    while not os.path.exists(f"{root}/spool/done/j{i}.status.json") and time.time() - t0 < 5:
        time.sleep(0.001)
    time.sleep(0.01 if LOAD else 0.05)
done_load = sum(1 for n in os.listdir(f"{root}/spool/done") if n.startswith("load") and n.endswith(".status.json"))
agent.terminate()
agent.wait(30)
srv.shutdown()
lat.sort()


def q(p):
    return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")


print(f"P3 load={LOAD} drops={len(lat)} of={N} p50_ms={q(0.5):.2f} p99_ms={q(0.99):.2f} "
      f"max_ms={(lat[-1] if lat else float('nan')):.2f} load_filed={done_load}")

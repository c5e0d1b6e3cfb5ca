#!/usr/bin/env python3
"""P4: JOBS job files waiting at start (default 100,000); the last one by name has priority=100.
Measures how long `run --once` takes to send the request of that top-priority job (it must have
read the whole inbox to know it comes first) and the agent's peak RSS with every job still waiting:
the server holds each request open, so nothing finishes.

With TOOL=aria2c, `aria2c -i` gets the same URLs (one list) against the same server and its peak
RSS is measured once it stops growing for 3 s (aria2c has no priorities: no time is given).

Environment: DROPFETCH (binary), WORK (an empty folder, the spool goes there), JOBS (100000),
TOOL (dropfetch). Prints one line: `P4 key=value ...`."""
import os, socket, subprocess, threading, time

N = int(os.environ.get("JOBS", "100000"))
TOOL = os.environ.get("TOOL", "dropfetch")
root = os.environ["WORK"]
lsock = socket.socket()
lsock.bind(("127.0.0.1", 0))
lsock.listen(4096)
port = lsock.getsockname()[1]
held, top_at = [], []
t0 = None


def serve(c):
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        try:
            chunk = c.recv(4096)
        except OSError:
            return
        if not chunk:
            return
        data += chunk
    if data.split(b" ", 2)[1] == b"/top" and not top_at:
        top_at.append(time.time() - t0)


def accept():
    while True:
        try:
            c, _ = lsock.accept()
        except OSError:
            return
        held.append(c)
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def peak_rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return int([l for l in f.read().splitlines() if l.startswith("VmHWM")][0].split()[1])
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return None


threading.Thread(target=accept, daemon=True).start()
if TOOL == "aria2c":
    with open(f"{root}/list.txt", "w") as f:
        for i in range(N - 1):
            f.write(f"http://127.0.0.1:{port}/f{i}\n")
        f.write(f"http://127.0.0.1:{port}/top\n")
    t0 = time.time()
    proc = subprocess.Popen(["aria2c", "-q", "-i", f"{root}/list.txt", "-j16", "--file-allocation=none",
                             "-d", f"{root}/out", "--timeout=600", "--lowest-speed-limit=0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hwm, grew_at = 0, time.time()
    while time.time() - t0 < 120:
        now = peak_rss_kib(proc.pid)
        if now is None:
            break
        if now > hwm:
            hwm, grew_at = now, time.time()
        if time.time() - grew_at > 3:
            break
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    lsock.close()
    print(f"P4 tool=aria2c jobs={N} top_s=nan peak_rss_mib={hwm / 1024:.1f} requests_held={len(held)}")
    raise SystemExit(0)

inbox = f"{root}/spool/inbox"
os.makedirs(inbox)
old = time.time() - 60
for i in range(N - 1):
    p = f"{inbox}/j{i:07d}.url"
    with open(p, "w") as f:
        f.write(f"http://127.0.0.1:{port}/f{i}\n")
    os.utime(p, (old, old))
p = f"{inbox}/j{N - 1:07d}.url"
with open(p, "w") as f:
    f.write(f"priority=100\nhttp://127.0.0.1:{port}/top\n")
os.utime(p, (old, old))
with open(f"{root}/cfg.yaml", "w") as f:
    f.write(f"spool: {root}/spool\ndestination: {root}/dl\nlog_level: warning\nscan_interval: 0\n"
            f"concurrency: {{ total: 16, per_host: 16 }}\nlimits: {{ low_speed: {{ bytes_per_second: 1, for: 10m }} }}\n")
t0 = time.time()
agent = subprocess.Popen([os.environ["DROPFETCH"], "run", "--once", "--config", f"{root}/cfg.yaml"],
                         stderr=subprocess.DEVNULL)
hwm = 0
while time.time() - t0 < 120:
    now = peak_rss_kib(agent.pid)
    if now is None:
        break
    hwm = max(hwm, now)
    if top_at and time.time() - t0 > top_at[0] + 2:
        break
    time.sleep(0.05)
agent.kill()
agent.wait()
lsock.close()
top = f"{top_at[0]:.2f}" if top_at else "nan"
print(f"P4 tool=dropfetch jobs={N} top_s={top} peak_rss_mib={hwm / 1024:.1f} requests_held={len(held)}")

#!/usr/bin/env bash
# System calls per small job (issue 23): `strace -f -c` of `dropfetch run --once` over N (1000)
# jobs of 16 KiB from nginx on 127.0.0.1 (keep-alive), concurrency 16, fsync off, spool on
# BENCH_DISK (/var/tmp); then `curl -Z --parallel-max 16` over the same files for comparison (CURL:
# bench/out/curl8/curl when there is one, else curl; its wrapper's sh adds ~50 calls in all).
# Prints the per-job totals and the top calls. Needs nginx, curl and strace (make bench-deps).
# Usage: bench/syscalls.sh [BINARY] [N]. Note: strace slows every call, so anything timed inside
# the agent (a worker's yield after 0.5 ms of work) happens more often than without it.
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath -m -- "${1:-$ROOT/.build/release/dropfetch}")
N=${2:-1000}
if [[ -z ${CURL:-} ]]; then CURL=curl; [[ -x $ROOT/bench/out/curl8/curl ]] && CURL=$ROOT/bench/out/curl8/curl; fi
DISK=${BENCH_DISK:-/var/tmp}
W=$(mktemp -d "$DISK/dropfetch-syscalls.XXXXXX")
trap '[[ -f $W/nginx.pid ]] && kill "$(cat "$W/nginx.pid")" 2>/dev/null; rm -rf "$W"' EXIT
mkdir -p "$W/www" "$W/spool/inbox" "$W/curl"
for (( i = 1; i <= N; i++ )); do head -c 16384 /dev/urandom > "$W/www/f$i.bin"; done
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$W/nginx.conf" <<NGINX
worker_processes 1; pid $W/nginx.pid; error_log $W/error.log; events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000; client_body_temp_path $W; proxy_temp_path $W;
  fastcgi_temp_path $W; uwsgi_temp_path $W; scgi_temp_path $W;
  server { listen 127.0.0.1:$port; root $W/www; } }
NGINX
PATH="$PATH:/usr/sbin:/sbin" nginx -c "$W/nginx.conf" -p "$W"
printf 'spool: %s/spool\ndestination: %s/out\nagent_id: syscalls\nfsync: false\nconcurrency: { total: 16, per_host: 16 }\nlog_level: warning\n' \
    "$W" "$W" > "$W/config.yaml"
for (( i = 1; i <= N; i++ )); do echo "http://127.0.0.1:$port/f$i.bin" > "$W/spool/inbox/j$i.url"; done
touch -d '10 seconds ago' "$W"/spool/inbox/*.url
strace -f -c -o "$W/dropfetch.txt" "$BIN" run --once --config "$W/config.yaml"
for (( i = 1; i <= N; i++ )); do printf 'url = http://127.0.0.1:%s/f%d.bin\noutput = %s/curl/f%d.bin\n' "$port" "$i" "$W" "$i"; done > "$W/curl.cfg"
strace -f -c -o "$W/curl.txt" "$CURL" -s --no-progress-meter -Z --parallel-max 16 -K "$W/curl.cfg"
for tool in dropfetch curl; do
    label=$tool; [[ $tool == curl ]] && label=$("$CURL" --version | head -n 1 | cut -d' ' -f1-2)
    awk -v n="$N" -v t="$label" '/ total$/ { printf "%s: %.1f system calls per job (strace)\n", t, $4 / n }' "$W/$tool.txt"
    awk -v n="$N" 'NR > 2 && $NF != "total" && NF >= 5 && $4 ~ /^[0-9]+$/ { printf "  %-14s %6.1f\n", $NF, $4 / n }' "$W/$tool.txt" \
        | sort -k2 -n -r | head -12
done
# Without strace's slowdown (which multiplies whatever is timed: loop wake-ups, a worker's yield):
# the kernel's count of system call entries (perf stat), less that of a run with nothing to do.
count() { perf stat -x, -e raw_syscalls:sys_enter "$@" 2>&1 >/dev/null | awk -F, '/raw_syscalls/ { print $1 }'; }
if command -v perf >/dev/null && [[ $(count true) =~ ^[0-9]+$ ]]; then
    rm -rf "$W/out" "$W/spool" "$W/curl"/*
    mkdir -p "$W/spool/inbox"
    idle=$(count "$BIN" run --once --config "$W/config.yaml")
    for (( i = 1; i <= N; i++ )); do echo "http://127.0.0.1:$port/f$i.bin" > "$W/spool/inbox/j$i.url"; done
    touch -d '10 seconds ago' "$W"/spool/inbox/*.url
    busy=$(count "$BIN" run --once --config "$W/config.yaml")
    curl_one=$(count "$CURL" -s -o /dev/null "http://127.0.0.1:$port/f1.bin")
    curl_all=$(count "$CURL" -s --no-progress-meter -Z --parallel-max 16 -K "$W/curl.cfg")
    awk -v a="$idle" -v b="$busy" -v c="$curl_one" -v d="$curl_all" -v n="$N" 'BEGIN {
        printf "perf stat: dropfetch %.1f, curl %.1f system calls per job (ratio %.2f)\n", (b - a) / n, (d - c) / n, (b - a) / (d - c) }'
fi

#!/usr/bin/env bash
# Serves 5,000 files of 16 KiB from tmpfs with nginx on 127.0.0.1:18080 (idempotent), for instructions.sh.
set -eu
B=${BENCH_DIR:-/dev/shm/bench}
mkdir -p "$B/www/small" "$B/logs"
if [ "$(ls "$B/www/small" | wc -l)" -lt 5000 ]; then
  for i in $(seq 1 5000); do head -c 16384 /dev/urandom > "$B/www/small/f$i.bin"; done
fi
cat > "$B/nginx.conf" <<CONF
worker_processes 2;
daemon on;
pid $B/nginx.pid;
error_log $B/logs/error.log;
events { worker_connections 4096; }
http {
  log_format t '\$msec \$request_uri \$status \$bytes_sent';
  access_log $B/logs/access.log t buffer=64k flush=1s;
  sendfile on; tcp_nopush on; keepalive_requests 100000;
  server { listen 127.0.0.1:18080; root $B/www; }
}
CONF
if [ -f "$B/nginx.pid" ] && kill -0 "$(cat "$B/nginx.pid")" 2>/dev/null; then
  kill -HUP "$(cat "$B/nginx.pid")"
else
  # A fresh machine's package lists may be empty: updated first (make bench-deps does the same).
  command -v nginx >/dev/null || { apt-get update -qq >/dev/null; apt-get install -y -qq nginx-light >/dev/null; }
  nginx -c "$B/nginx.conf"
fi
curl -sf -o /dev/null http://127.0.0.1:18080/small/f1.bin

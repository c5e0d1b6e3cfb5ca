#!/usr/bin/env bash
# Deterministic cost per small job: user-space instructions (valgrind --tool=callgrind) and context
# switches / page faults (perf stat software counters), dropfetch against curl --parallel on the same
# 16 KiB files from nginx (bench/setup-nginx.sh), fsync off, digest none, spool and files on tmpfs.
# Instructions: marginal between 500 and 1,000 jobs (fixed start-up cost cancels out).
# Prints "instr_ratio R", "ctxsw_per_job C", "faults_per_job F" last.
# Usage: DROPFETCH_BIN=... instructions.sh (make bench runs it on the release build after bench/run.sh;
# the steering group's ../shared/bench/instructions.sh, with its nginx on tmpfs in nginx-tmpfs.sh).
set -eu
export PATH="$PATH:/usr/sbin:/sbin"
here=$(cd "$(dirname "$0")" && pwd); "$here/nginx-tmpfs.sh" >/dev/null
need() { command -v "$1" >/dev/null || { apt-get update -qq >/dev/null; apt-get install -y -qq "$2" >/dev/null; }; }
need valgrind valgrind
need perf linux-perf
d=$(mktemp -d /dev/shm/instr-XXXX); trap 'rm -rf "$d"' EXIT
cfg() { printf 'spool: %s/sp\ndestination: %s/dl\nlog_level: warning\nconcurrency: { total: 4, per_host: 2 }\nfsync: false\ndigest: none\n' "$d" "$d" > "$d/cfg.yaml"; }
cfg
jobs() { rm -rf "$d/sp" "$d/dl" "$d/c"; mkdir -p "$d/sp/inbox" "$d/c"
  for i in $(seq 1 "$1"); do printf 'http://127.0.0.1:18080/small/f%d.bin\n  out=f%d.bin\n' $(( (i - 1) % 5000 + 1 )) "$i" > "$d/sp/inbox/j$i.url"; done
  touch -d '1 minute ago' "$d"/sp/inbox/*.url
  for i in $(seq 1 "$1"); do printf 'url = "http://127.0.0.1:18080/small/f%d.bin"\noutput = "%s/c/f%d.bin"\n' $(( (i - 1) % 5000 + 1 )) "$d" "$i"; done > "$d/curl.cfg"; }
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p' | tail -1; }
declare -A I
for n in 500 1000; do
  jobs "$n"; I[df$n]=$(ir "$DROPFETCH_BIN" run --once --quiet --config "$d/cfg.yaml")
  c=$(ls "$d/sp/done" | grep -c '\.status\.json$' || true); [ "$c" -eq "$n" ] || { echo "only $c of $n done"; exit 1; }
  I[cu$n]=$(ir curl -s --parallel --parallel-max 2 -K "$d/curl.cfg")
done
dfj=$(( (I[df1000] - I[df500]) / 500 )); cuj=$(( (I[cu1000] - I[cu500]) / 500 ))
echo "instructions per job: dropfetch $dfj, curl $cuj ($(curl --version | head -1 | cut -d' ' -f1-2))"
jobs 4000
s=$(perf stat -x, -e context-switches,page-faults "$DROPFETCH_BIN" run --once --quiet --config "$d/cfg.yaml" 2>&1 >/dev/null)
cs=$(echo "$s" | awk -F, '$3=="context-switches"{print $1}'); pf=$(echo "$s" | awk -F, '$3=="page-faults"{print $1}')
s2=$(perf stat -x, -e context-switches,page-faults curl -s --parallel --parallel-max 2 -K "$d/curl.cfg" 2>&1 >/dev/null)
cs2=$(echo "$s2" | awk -F, '$3=="context-switches"{print $1}'); pf2=$(echo "$s2" | awk -F, '$3=="page-faults"{print $1}')
echo "4000 jobs: context switches dropfetch $cs, curl $cs2; page faults dropfetch $pf, curl $pf2"
echo "instr_ratio $(python3 -c "print(round($dfj/$cuj,2))")"
echo "ctxsw_per_job $(python3 -c "print(round($cs/4000,2))")"
echo "faults_per_job $(python3 -c "print(round($pf/4000,2))")"

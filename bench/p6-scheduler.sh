#!/usr/bin/env bash
# P6: JOBS jobs (default 8,000) on one host under the default limits (total 4, per_host 2), fsync
# off, from the bench's nginx: the CPU time (user + system) and wall time of `run --once`. A
# scheduler that rescans its queue per decision while the head is blocked by per_host grows
# quadratically. TOOL=curl (`curl --parallel --parallel-max 2`) or TOOL=aria2c (`aria2c -i -j2`)
# fetch the same files the same two at a time, for comparison.
# Environment: DROPFETCH (binary), WORK (an empty folder), BASE (nginx URL), NAMES (a file, one name
# under BASE/small/ a line), JOBS (8000), TOOL (dropfetch), CURL (bench/out/curl8/curl when there is
# one, else curl). Prints one line: `P6 key=value ...`, with curl=VERSION for TOOL=curl.
set -euo pipefail
N=${JOBS:-8000}; TOOL=${TOOL:-dropfetch}; d=$WORK
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [[ -z ${CURL:-} ]]; then CURL=curl; [[ -x $ROOT/bench/out/curl8/curl ]] && CURL=$ROOT/bench/out/curl8/curl; fi
extra=""
mapfile -t names < "$NAMES"
mkdir -p "$d/spool/inbox" "$d/out"
case $TOOL in
    dropfetch)
        for (( i = 0; i < N; i++ )); do
            printf '%s/small/%s\n  out=f%d.bin\n' "$BASE" "${names[i % ${#names[@]}]}" "$i" > "$d/spool/inbox/j$i.url"
        done
        touch -d '1 minute ago' "$d"/spool/inbox/*.url
        printf 'spool: %s/spool\ndestination: %s/out\nlog_level: warning\nconcurrency: { total: 4, per_host: 2 }\nfsync: false\n' \
            "$d" "$d" > "$d/cfg.yaml"
        cmd=("$DROPFETCH" run --once --config "$d/cfg.yaml") ;;
    curl)
        for (( i = 0; i < N; i++ )); do
            printf 'url = "%s/small/%s"\noutput = "%s/out/f%d.bin"\n' "$BASE" "${names[i % ${#names[@]}]}" "$d" "$i"
        done > "$d/curl.list"
        extra=" curl=$("$CURL" --version | head -n 1 | cut -d' ' -f2)"
        cmd=("$CURL" -s --fail --parallel --parallel-max 2 -K "$d/curl.list") ;;
    aria2c)
        for (( i = 0; i < N; i++ )); do
            printf '%s/small/%s\n  out=f%d.bin\n' "$BASE" "${names[i % ${#names[@]}]}" "$i"
        done > "$d/aria2.list"
        cmd=(aria2c -q -i "$d/aria2.list" -j2 --file-allocation=none --show-console-readout=false
             --summary-interval=0 -d "$d/out") ;;
    *) echo "P6 error=unknown-tool-$TOOL"; exit 1 ;;
esac
/usr/bin/time -f '%U %S %e' -o "$d/time" "${cmd[@]}" >"$d/log" 2>&1 || true
read -r u s e < "$d/time"
files=$(find "$d/out" -maxdepth 1 -name 'f*.bin' | wc -l)
echo "P6 tool=$TOOL jobs=$N cpu_s=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }') user_s=$u sys_s=$s wall_s=$e files=$files$extra"

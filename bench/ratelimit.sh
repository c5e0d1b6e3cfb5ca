#!/usr/bin/env bash
# Rate-limit accuracy: one file downloaded at the same per-download limit by dropfetch
# (max-download-limit=), `curl --limit-rate` and `aria2c --max-download-limit`, each run once in this
# order; prints one line with achieved ÷ target for each (1.00 is exact; above 1 the tool let more
# through than the limit). Achieved = file size ÷ wall time of the whole command.
#
# Usage: bench/ratelimit.sh BASE_URL WWW_DIR WORK_DIR
#   BASE_URL  a server (run.sh's nginx) that serves WWW_DIR
#   WORK_DIR  an empty scratch folder
# Environment: DROPFETCH (binary, default .build/release/dropfetch), CURL (bench/out/curl8/curl when
# there is one, else curl), BENCH_RATE (500K; K and M are powers of 1024, as all three tools read
# them), BENCH_RATE_MB (4: the file's size in MiB).
set -euo pipefail
export LC_ALL=C

die() { printf 'ratelimit: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'bench: %s\n' "$*" >&2; }

(( $# == 3 )) || die "usage: $0 BASE_URL WWW_DIR WORK_DIR"
BASE=$1 WWW=$2 WORK=$3
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DROPFETCH=${DROPFETCH:-$ROOT/.build/release/dropfetch}
RATE=${BENCH_RATE:-500K}
SIZE_MB=${BENCH_RATE_MB:-4}
if [[ -z ${CURL:-} ]]; then CURL=curl; [[ -x $ROOT/bench/out/curl8/curl ]] && CURL=$ROOT/bench/out/curl8/curl; fi

[[ $SIZE_MB =~ ^[0-9]+$ ]] && (( SIZE_MB > 0 )) || die "BENCH_RATE_MB must be a positive integer"
case $RATE in
    *[kK]) rate_bytes=$(( ${RATE%[kK]} * 1024 )) ;;
    *[mM]) rate_bytes=$(( ${RATE%[mM]} * 1048576 )) ;;
    *) rate_bytes=$RATE ;;
esac
[[ $rate_bytes =~ ^[0-9]+$ ]] && (( rate_bytes > 0 )) || die "BENCH_RATE must be a whole number of bytes, K or M (got '$RATE')"

size=$(( SIZE_MB * 1048576 ))
mkdir -p "$WORK"
head -c "$size" /dev/urandom > "$WWW/rate.bin"
want_sha=$(sha256sum "$WWW/rate.bin" | cut -d' ' -f1)
URL=$BASE/rate.bin

now() { local t=${EPOCHREALTIME:-}; [[ -n $t ]] && printf '%s' "${t/,/.}" || date +%s.%N; }
# accuracy SECONDS: achieved rate ÷ target, two places.
accuracy() { awk -v s="$1" -v n="$size" -v r="$rate_bytes" 'BEGIN { printf "%.2f", (s > 0) ? n / s / r : 0 }'; }

results=()
# measure NAME FILE CMD...: runs CMD, checks FILE's content, adds NAME's accuracy (or why not) to results.
measure() {
    local name=$1 file=$2 log="$WORK/$1.log" t0 t1 rc=0 got
    shift 2
    rm -f -- "$file"
    t0=$(now)
    "$@" >"$log" 2>&1 || rc=$?
    t1=$(now)
    if (( rc != 0 )); then
        say "ratelimit: $name exited $rc; last lines:"; tail -n 5 "$log" >&2
        results+=("$name failed"); return
    fi
    got=$(sha256sum "$file" 2>/dev/null | cut -d' ' -f1)
    [[ $got == "$want_sha" ]] || die "$name: the downloaded file differs from the source"
    local seconds; seconds=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
    say "$(printf 'rate   %-10s %8.3f s at %s' "$name" "$seconds" "$RATE")"
    results+=("$name $(accuracy "$seconds")")
}

if [[ -x $DROPFETCH ]]; then
    spool=$WORK/spool out=$WORK/dropfetch-out
    rm -rf -- "$spool" "$out"
    mkdir -p "$spool/inbox" "$out"
    cat > "$WORK/config.yaml" <<YAML
spool: '$spool'
destination: '$out'
log_level: warning
YAML
    printf '%s\n  out=rate.bin\n  max-download-limit=%s\n' "$URL" "$RATE" > "$spool/inbox/rate.url"
    # Settled already (DESIGN.md §1: a job file found by a scan waits until its mtime is 2 s old),
    # so that the wall time is the download's, as it is for curl and aria2c, not the settle wait.
    touch -d '1 minute ago' "$spool/inbox/rate.url"
    measure dropfetch "$out/rate.bin" "$DROPFETCH" run --once --config "$WORK/config.yaml"
else
    results+=("dropfetch skipped")
fi

measure curl "$WORK/curl.bin" "$CURL" -s --fail --limit-rate "$RATE" -o "$WORK/curl.bin" "$URL"

if command -v aria2c >/dev/null; then
    measure aria2c "$WORK/aria2c.bin" aria2c -x1 -s1 --file-allocation=none -q \
        --show-console-readout=false --summary-interval=0 --max-download-limit="$RATE" \
        -d "$WORK" -o aria2c.bin "$URL"
else
    results+=("aria2c skipped")
fi

rm -f -- "$WWW/rate.bin"
line="rate limit accuracy (achieved ÷ target, 1 × $SIZE_MB MiB at $RATE; $("$CURL" --version | head -n 1 | cut -d' ' -f1-2)):"
for result in "${results[@]}"; do line+="  $result"; done
printf '%s\n' "$line"

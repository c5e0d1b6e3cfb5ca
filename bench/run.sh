#!/usr/bin/env bash
# Benchmarks dropfetch against curl --parallel and aria2c on a loopback nginx over a tmpfs workspace.
# Scenarios: big = one BENCH_BIG_MB MiB file; small = BENCH_SMALL_COUNT files of 16 KiB at concurrency 16;
# ratelimit = bench/ratelimit.sh: one file at the same per-download limit, achieved ÷ target for each tool.
# Each tool runs BENCH_WARMUP unmeasured times, then BENCH_REPEAT measured times (tools interleaved);
# the table shows the median wall time. Every run's output is verified; a wrong result fails the bench.
# Environment: DROPFETCH (binary), BENCH_ONLY=big|small|ratelimit, BENCH_REPEAT (3), BENCH_WARMUP (1), BENCH_SMALL_COUNT (5000),
# BENCH_BIG_MB (2048), BENCH_WORKDIR (a directory to use instead of tmpfs, e.g. to include a real disk),
# BENCH_RATE (500K) and BENCH_RATE_MB (4) for ratelimit.
set -euo pipefail
export LC_ALL=C
umask 022
shopt -s nullglob

ORIG_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

user_dropfetch=${DROPFETCH:-}
DROPFETCH=${DROPFETCH:-.build/release/dropfetch}
# A DROPFETCH given relative to the caller's folder also works; the default is relative to the repo root.
if [[ -n $user_dropfetch && $DROPFETCH != /* && ! -e $DROPFETCH && -e $ORIG_PWD/$DROPFETCH ]]; then
    DROPFETCH=$ORIG_PWD/$DROPFETCH
fi
DROPFETCH=$(realpath -m -- "$DROPFETCH")

BENCH_ONLY=${BENCH_ONLY:-}
BENCH_REPEAT=${BENCH_REPEAT:-3}
BENCH_WARMUP=${BENCH_WARMUP:-1}
BENCH_SMALL_COUNT=${BENCH_SMALL_COUNT:-5000}
BENCH_BIG_MB=${BENCH_BIG_MB:-2048}
BENCH_WORKDIR=${BENCH_WORKDIR:-}
SMALL_KIB=16
CONCURRENCY=16
OUT_DIR=$ROOT/bench/out

die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'bench: %s\n' "$*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]] && (( $1 > 0 )); }

case $BENCH_ONLY in ''|big|small|ratelimit) ;; *) die "BENCH_ONLY must be big, small or ratelimit (got '$BENCH_ONLY')" ;; esac
is_uint "$BENCH_REPEAT" || die "BENCH_REPEAT must be a positive integer"
[[ $BENCH_WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer"
is_uint "$BENCH_SMALL_COUNT" || die "BENCH_SMALL_COUNT must be a positive integer"
is_uint "$BENCH_BIG_MB" || die "BENCH_BIG_MB must be a positive integer"
want() { [[ -z $BENCH_ONLY || $BENCH_ONLY == "$1" ]]; }

PATH=$PATH:/usr/sbin:/sbin
command -v nginx >/dev/null || die "nginx not found (make bench installs it)"
command -v curl >/dev/null || die "curl not found (make bench installs it)"
command -v sha256sum >/dev/null || die "sha256sum not found"
HAVE_ARIA2=0; command -v aria2c >/dev/null && HAVE_ARIA2=1
HAVE_DROPFETCH=0; [[ -x $DROPFETCH ]] && HAVE_DROPFETCH=1
(( HAVE_ARIA2 )) || say "aria2c not found: its rows are skipped (make bench installs it)"
(( HAVE_DROPFETCH )) || say "dropfetch skipped: no executable at $DROPFETCH (build with 'make release' or set DROPFETCH=...)"

# ---------------------------------------------------------------- workspace and cleanup

W=""; MOUNTED=0; NGINX_PID=""; WS_KIND=""
cleanup() {
    local rc=$?
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        for _ in {1..50}; do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    if [[ -n $W && -d $W ]]; then
        if (( MOUNTED )); then
            umount "$W" 2>/dev/null || umount -l "$W" 2>/dev/null || say "could not unmount $W"
            rmdir "$W" 2>/dev/null || true
        else
            rm -rf -- "$W"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

need_mb=64
want big && need_mb=$(( need_mb + 2 * BENCH_BIG_MB ))
want small && need_mb=$(( need_mb + 2 * (BENCH_SMALL_COUNT * (SMALL_KIB + 4) / 1024 + 1) ))
BENCH_RATE_MB=${BENCH_RATE_MB:-4}
is_uint "$BENCH_RATE_MB" || die "BENCH_RATE_MB must be a positive integer"
want ratelimit && need_mb=$(( need_mb + 4 * BENCH_RATE_MB ))

if [[ -n $BENCH_WORKDIR ]]; then
    mkdir -p -- "$BENCH_WORKDIR"
    W=$(mktemp -d "$(realpath -- "$BENCH_WORKDIR")/dropfetch-bench.XXXXXX")
    WS_KIND="directory (BENCH_WORKDIR, not tmpfs)"
else
    if (( EUID == 0 )); then
        W=$(mktemp -d /tmp/dropfetch-bench.XXXXXX)
        if mount -t tmpfs -o "size=${need_mb}m,mode=0755" dropfetch-bench "$W" 2>/dev/null; then
            MOUNTED=1; WS_KIND="tmpfs (mounted, ${need_mb} MiB)"
        else
            rmdir "$W"; W=""
        fi
    fi
    if [[ -z $W ]]; then
        [[ -d /dev/shm && -w /dev/shm ]] || die "no tmpfs available (not root, no writable /dev/shm); set BENCH_WORKDIR"
        W=$(mktemp -d /dev/shm/dropfetch-bench.XXXXXX)
        WS_KIND="tmpfs (/dev/shm)"
    fi
    mem_avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
    (( mem_avail_mb >= need_mb + 256 )) ||
        die "the tmpfs workspace needs ~${need_mb} MiB of RAM, only ${mem_avail_mb} MiB available; lower BENCH_BIG_MB or set BENCH_WORKDIR"
fi
chmod 0755 "$W"
avail_mb=$(( $(df -P -k -- "$W" | awk 'NR == 2 { print $4 }') / 1024 ))
(( avail_mb >= need_mb )) || die "workspace $W has ${avail_mb} MiB free, needs ${need_mb} MiB"
say "workspace: $W ($WS_KIND)"

WWW=$W/www; OUT=$W/out; NG=$W/nginx; LOGS=$W/logs; DF=$W/dropfetch
mkdir -p "$WWW/small" "$OUT" "$NG/tmp" "$LOGS" "$DF"

# ---------------------------------------------------------------- test data

BIG_SHA=""; SMALL_SHA=""
# The sha256 of the concatenation of DIR's *.bin files in name order: one hash checks every small file.
tree_sha() { (cd "$1" && printf '%s\0' *.bin | xargs -0 -r cat | sha256sum | cut -d' ' -f1); }

if want big; then
    say "creating big.bin (${BENCH_BIG_MB} MiB of random data)"
    head -c $(( BENCH_BIG_MB * 1048576 )) /dev/urandom > "$WWW/big.bin"
    BIG_SHA=$(sha256sum "$WWW/big.bin" | cut -d' ' -f1)
fi
if want small; then
    say "creating ${BENCH_SMALL_COUNT} files of ${SMALL_KIB} KiB"
    head -c $(( BENCH_SMALL_COUNT * SMALL_KIB * 1024 )) /dev/urandom > "$W/blob"
    split -b "${SMALL_KIB}K" -d -a "${#BENCH_SMALL_COUNT}" --additional-suffix=.bin "$W/blob" "$WWW/small/f"
    rm -f "$W/blob"
    made=("$WWW"/small/*.bin)
    (( ${#made[@]} == BENCH_SMALL_COUNT )) || die "split made ${#made[@]} files, expected $BENCH_SMALL_COUNT"
    SMALL_SHA=$(tree_sha "$WWW/small")
    SMALL_NAMES=("${made[@]##*/}")
fi

# ---------------------------------------------------------------- nginx

nginx_v=$(nginx -V 2>&1)
temp_paths="    client_body_temp_path \"$NG/tmp/client_body\";"
for m in proxy fastcgi uwsgi scgi; do
    [[ $nginx_v == *"--without-http_${m}_module"* ]] || temp_paths+=$'\n'"    ${m}_temp_path \"$NG/tmp/$m\";"
done
nginx_e=(); [[ $(nginx -h 2>&1) == *"-e filename"* ]] && nginx_e=(-e "$NG/error.log")
TOKEN=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '%s' "$TOKEN" > "$WWW/ping.txt"

PORT=""
for _ in {1..20}; do
    port=$(( 20000 + RANDOM % 40000 ))
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue   # something already listens there
    cat > "$NG/nginx.conf" <<NGINX
daemon off;
worker_processes auto;
pid "$NG/nginx.pid";
error_log "$NG/error.log" warn;
events { worker_connections 1024; }
http {
    types { application/octet-stream bin; text/plain txt; }
    default_type application/octet-stream;
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 100000;
    keepalive_timeout 65s;
$temp_paths
    server {
        listen 127.0.0.1:$port;
        root "$WWW";
        location / { }
    }
}
NGINX
    nginx -p "$NG" -c "$NG/nginx.conf" "${nginx_e[@]}" >>"$NG/stdout.log" 2>&1 &
    NGINX_PID=$!
    for _ in {1..100}; do
        kill -0 "$NGINX_PID" 2>/dev/null || break
        if [[ $(curl -s --max-time 1 "http://127.0.0.1:$port/ping.txt" 2>/dev/null) == "$TOKEN" ]]; then
            PORT=$port; break
        fi
        sleep 0.05
    done
    [[ -n $PORT ]] && break
    kill -TERM "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""
done
if [[ -z $PORT ]]; then
    cat "$NG/error.log" "$NG/stdout.log" >&2 2>/dev/null || true
    die "nginx did not start"
fi
BASE=http://127.0.0.1:$PORT
say "nginx $(nginx -v 2>&1 | sed 's/.*\///') on $BASE (pid $NGINX_PID)"

# ---------------------------------------------------------------- measuring

declare -A TIMES=()     # "scenario|tool" -> space-separated seconds of each run
declare -A SKIPPED=()   # "scenario|tool" -> reason
now() { local t=${EPOCHREALTIME:-}; [[ -n $t ]] && printf '%s' "${t/,/.}" || date +%s.%N; }
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { printf "%.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

reset_out() { rm -rf -- "$OUT"; mkdir -p "$OUT"; }

# fail_run KEY LOG MESSAGE: print the tool's log and stop the bench.
fail_run() {
    say "FAILED $1: $3"
    if [[ -s $2 ]]; then say "last lines of $1's output:"; tail -n 20 "$2" >&2; fi
    exit 1
}

# verify_out KEY LOG SCENARIO: the output folder holds exactly the expected files with the expected content.
verify_out() {
    local key=$1 log=$2 scenario=$3 files hidden got
    files=("$OUT"/*)
    hidden=$(find "$OUT" -mindepth 1 -maxdepth 1 -name '.*' | wc -l)
    if [[ $scenario == big ]]; then
        (( ${#files[@]} == 1 )) && [[ -f $OUT/big.bin ]] ||
            fail_run "$key" "$log" "expected exactly big.bin in the output, found ${#files[@]} entries: ${files[*]##*/}"
        got=$(sha256sum "$OUT/big.bin" | cut -d' ' -f1)
        [[ $got == "$BIG_SHA" ]] || fail_run "$key" "$log" "big.bin sha256 $got, expected $BIG_SHA"
    else
        local bins=("$OUT"/*.bin)
        (( ${#files[@]} == BENCH_SMALL_COUNT && ${#bins[@]} == BENCH_SMALL_COUNT )) ||
            fail_run "$key" "$log" "expected $BENCH_SMALL_COUNT files, found ${#bins[@]} .bin of ${#files[@]} entries"
        got=$(tree_sha "$OUT")
        [[ $got == "$SMALL_SHA" ]] || fail_run "$key" "$log" "the small files' contents differ from the source"
    fi
    (( hidden == 0 )) || say "note: $key left $hidden hidden file(s) in the output folder"
}

# timed LOG CMD...: runs CMD with its output in LOG; sets ELAPSED (seconds) and RC.
timed() {
    local log=$1 t0 t1; shift
    t0=$(now)
    if "$@" >"$log" 2>&1; then RC=0; else RC=$?; fi
    t1=$(now)
    ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
}

# yaml_str S: S as a single-quoted YAML scalar.
yaml_str() { printf "'%s'" "${1//\'/\'\'}"; }

# dropfetch_config FSYNC: the bench config and a fresh, empty spool.
dropfetch_config() {
    rm -rf -- "$DF/spool"
    mkdir -p "$DF/spool/inbox"
    cat > "$DF/config.yaml" <<YAML
spool: $(yaml_str "$DF/spool")
destination: $(yaml_str "$OUT")
concurrency: { total: $CONCURRENCY, per_host: $CONCURRENCY }
fsync: $1
log_level: warning
YAML
}

# dropfetch_prepare SCENARIO FSYNC: a fresh spool with the scenario's jobs in the inbox, and its config.
dropfetch_prepare() {
    local scenario=$1 name
    dropfetch_config "$2"
    if [[ $scenario == big ]]; then
        printf '%s/big.bin\n  out=big.bin\n' "$BASE" > "$DF/spool/inbox/big.url"
    else
        for name in "${SMALL_NAMES[@]}"; do
            printf '%s/small/%s\n  out=%s\n' "$BASE" "$name" "$name" > "$DF/spool/inbox/${name%.bin}.url"
        done
    fi
}

# dropfetch_verify KEY LOG SCENARIO: exit status 0, every job filed in done/, none left elsewhere.
dropfetch_verify() {
    local key=$1 log=$2 scenario=$3 expected=1 done failed inbox
    [[ $scenario == small ]] && expected=$BENCH_SMALL_COUNT
    if (( RC != 0 )); then
        local why="exit status $RC"
        case $RC in
            1) why+=" (some jobs failed)" ;;
            2) why+=" (config or usage error)" ;;
            3) why+=" (spool unusable)" ;;
            75) why+=" (jobs left waiting for a retry)" ;;
        esac
        local first_failed=("$DF"/spool/failed/*.status.json)
        if (( ${#first_failed[@]} )); then say "first failed status record:"; head -c 2000 "${first_failed[0]}" >&2; echo >&2; fi
        fail_run "$key" "$log" "$why"
    fi
    done=("$DF"/spool/done/*.url); failed=("$DF"/spool/failed/*.url); inbox=("$DF"/spool/inbox/*.url)
    (( ${#done[@]} == expected && ${#failed[@]} == 0 && ${#inbox[@]} == 0 )) ||
        fail_run "$key" "$log" "spool: ${#done[@]} done (expected $expected), ${#failed[@]} failed, ${#inbox[@]} still in inbox"
}

# run_once SCENARIO TOOL REPEAT: one run of TOOL, verified; a measured one (REPEAT >= 1) appends its time to TIMES.
run_once() {
    local scenario=$1 tool=$2 r=$3 key="$1|$2" log="$LOGS/${1}-${2// /_}-$3.log"
    reset_out
    case "$scenario:$tool" in
        big:curl)
            timed "$log" curl -s --fail -o "$OUT/big.bin" "$BASE/big.bin" ;;
        small:curl)
            timed "$log" curl -s --fail --parallel --parallel-max "$CONCURRENCY" -K "$W/curl.list" ;;
        big:aria2c)
            timed "$log" aria2c -x1 -s1 --file-allocation=none -q --show-console-readout=false \
                --summary-interval=0 -d "$OUT" -o big.bin "$BASE/big.bin" ;;
        small:aria2c)
            timed "$log" aria2c -i "$W/aria2.list" -j"$CONCURRENCY" --file-allocation=none -q \
                --show-console-readout=false --summary-interval=0 -d "$OUT" ;;
        *:dropfetch*)
            local fsync=true
            [[ $tool == *"fsync=off"* ]] && fsync=false
            dropfetch_prepare "$scenario" "$fsync"
            timed "$log" "$DROPFETCH" run --once --config "$DF/config.yaml" ;;
        *) die "unknown run $key" ;;
    esac
    if [[ $tool != dropfetch* ]] && (( RC != 0 )); then fail_run "$key" "$log" "exit status $RC"; fi
    if [[ $tool == dropfetch* ]]; then dropfetch_verify "$key" "$log" "$scenario"; fi
    verify_out "$key" "$log" "$scenario"
    if (( r >= 1 )); then
        TIMES[$key]+="$ELAPSED "
        say "$(printf '%-6s %-22s run %d/%d: %8.3f s' "$scenario" "$tool" "$r" "$BENCH_REPEAT" "$ELAPSED")"
    else
        say "$(printf '%-6s %-22s warm-up: %8.3f s' "$scenario" "$tool" "$ELAPSED")"
    fi
}

# The tools of a scenario, in the order they are run and listed.
tools_for() {
    local t=(curl aria2c)
    if [[ $1 == big ]]; then t+=("dropfetch"); else t+=("dropfetch fsync=on" "dropfetch fsync=off"); fi
    printf '%s\n' "${t[@]}"
}

# dropfetch_check: `dropfetch check` accepts the bench config before any run is timed.
dropfetch_check() {
    dropfetch_config true
    if ! "$DROPFETCH" check --config "$DF/config.yaml" >"$LOGS/check.log" 2>&1; then
        fail_run "dropfetch check" "$LOGS/check.log" "'dropfetch check' rejected the bench config ($DF/config.yaml):
$(cat "$DF/config.yaml")"
    fi
}

SCENARIOS=()
want big && SCENARIOS+=(big)
want small && SCENARIOS+=(small)

if want small; then
    : > "$W/curl.list"; : > "$W/aria2.list"
    for name in "${SMALL_NAMES[@]}"; do
        printf 'url = "%s/small/%s"\noutput = "%s/%s"\n' "$BASE" "$name" "$OUT" "$name" >> "$W/curl.list"
        printf '%s/small/%s\n  out=%s\n' "$BASE" "$name" "$name" >> "$W/aria2.list"
    done
fi

for scenario in "${SCENARIOS[@]}"; do
    mapfile -t tools < <(tools_for "$scenario")
    for tool in "${tools[@]}"; do
        if [[ $tool == aria2c ]] && (( ! HAVE_ARIA2 )); then SKIPPED["$scenario|$tool"]="aria2c not installed"; fi
        if [[ $tool == dropfetch* ]] && (( ! HAVE_DROPFETCH )); then SKIPPED["$scenario|$tool"]="no binary at $DROPFETCH"; fi
    done
    if (( HAVE_DROPFETCH )); then dropfetch_check; fi
    for (( r = 1 - BENCH_WARMUP; r <= BENCH_REPEAT; r++ )); do
        for tool in "${tools[@]}"; do
            [[ -n ${SKIPPED["$scenario|$tool"]:-} ]] && continue
            run_once "$scenario" "$tool" "$r"
        done
    done
done

# ---------------------------------------------------------------- rate-limit accuracy

RATE_LINE=""
if want ratelimit; then
    RATE_LINE=$(DROPFETCH="$DROPFETCH" BENCH_RATE_MB="$BENCH_RATE_MB" "$ROOT/bench/ratelimit.sh" "$BASE" "$WWW" "$W/ratelimit")
fi

# ---------------------------------------------------------------- report

label() {
    if [[ $1 == big ]]; then printf 'big: 1 x %d MiB' "$BENCH_BIG_MB"
    else printf 'small: %d x %d KiB, c=%d' "$BENCH_SMALL_COUNT" "$SMALL_KIB" "$CONCURRENCY"; fi
}
# ratio A B: A / B to two places, or n/a when B was not measured.
ratio() {
    if [[ -z $2 ]]; then printf 'n/a'; return; fi
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "n/a" }'
}
version_of() { "$@" 2>&1 | head -n 1 | cut -c1-60 || true; }

mkdir -p "$OUT_DIR"
report=$OUT_DIR/results.txt
{
    echo "dropfetch bench  $(date -u +%Y-%m-%dT%H:%M:%SZ)  host $(uname -n)  $(uname -sr)  $(nproc) CPUs"
    echo "workspace: $WS_KIND   warm-up: $BENCH_WARMUP   repeat: $BENCH_REPEAT (median shown)   server: nginx on 127.0.0.1"
    echo "curl: $(version_of curl --version)"
    if (( HAVE_ARIA2 )); then echo "aria2c: $(version_of aria2c --version)"; fi
    if (( HAVE_DROPFETCH )); then echo "dropfetch: $DROPFETCH"; fi
    echo "MB = 2^20 bytes; ratios are dropfetch time / other tool's time (lower is better, < 1 = dropfetch faster)"
    echo
    if (( ${#SCENARIOS[@]} )); then
        printf '%-28s  %-20s  %9s  %14s  %8s  %9s\n' scenario tool "median s" rate "df/curl" "df/aria2c"
        printf '%-28s  %-20s  %9s  %14s  %8s  %9s\n' "----------------------------" "--------------------" \
            "---------" "--------------" "--------" "---------"
    fi
    for scenario in "${SCENARIOS[@]}"; do
        mapfile -t tools < <(tools_for "$scenario")
        declare -A MED=()
        for tool in "${tools[@]}"; do
            key="$scenario|$tool"
            [[ -n ${TIMES[$key]:-} ]] || continue
            # shellcheck disable=SC2086
            MED[$tool]=$(median ${TIMES[$key]})
        done
        for tool in "${tools[@]}"; do
            key="$scenario|$tool"
            if [[ -z ${MED[$tool]:-} ]]; then
                printf '%-28s  %-20s  %9s  %14s  %8s  %9s  (skipped: %s)\n' "$(label "$scenario")" "$tool" \
                    - - - - "${SKIPPED[$key]:-not run}"
                continue
            fi
            m=${MED[$tool]}
            if [[ $scenario == big ]]; then
                rate=$(awk -v mb="$BENCH_BIG_MB" -v s="$m" 'BEGIN { printf "%.1f MB/s", (s > 0) ? mb / s : 0 }')
            else
                rate=$(awk -v n="$BENCH_SMALL_COUNT" -v s="$m" 'BEGIN { printf "%.0f files/s", (s > 0) ? n / s : 0 }')
            fi
            vs_curl=-; vs_aria=-
            if [[ $tool == dropfetch* ]]; then
                vs_curl=$(ratio "$m" "${MED[curl]:-}"); vs_aria=$(ratio "$m" "${MED[aria2c]:-}")
            fi
            printf '%-28s  %-20s  %9s  %14s  %8s  %9s\n' "$(label "$scenario")" "$tool" "$m" "$rate" "$vs_curl" "$vs_aria"
        done
        unset MED
    done
    if [[ -n $RATE_LINE ]]; then echo; echo "$RATE_LINE"; fi
    echo
    echo "runs (seconds):"
    for scenario in "${SCENARIOS[@]}"; do
        mapfile -t tools < <(tools_for "$scenario")
        for tool in "${tools[@]}"; do
            if [[ -n ${TIMES["$scenario|$tool"]:-} ]]; then
                printf '  %-6s %-20s %s\n' "$scenario" "$tool" "${TIMES["$scenario|$tool"]}"
            fi
        done
    done
} > "$report"
echo
cat "$report"
echo
say "results written to ${report#"$ROOT"/}"

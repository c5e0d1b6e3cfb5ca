#!/usr/bin/env bash
# The performance cases of issue 12 (P1–P6), each beside its target and, where there is one, the
# figures of curl and aria2c from the same run; see bench/README.md. Served data sits on tmpfs
# (nginx on 127.0.0.1); downloads and spools go to a real disk (BENCH_DISK) wherever fsync matters.
#   P1 one big file (BENCH_BIG_MB, 2048) to disk with fsync on (beside curl, and curl + sync), and to
#      tmpfs with `digest: none`
#   P2 BENCH_SMALL_COUNT (5000) × 16 KiB at concurrency 16, fsync on, spool and files on disk;
#      also the longest loop turn (dropfetch_loop_stall_seconds) during those runs
#   P3 drop → request latency over BENCH_P3_DROPS (200) drops, idle and while BENCH_P3_LOAD (20000)
#      jobs run on another host (bench/p3-latency.py)
#   P4 BENCH_P4_JOBS (100000) waiting jobs: time to the top-priority one's request, peak RSS; aria2c's
#      peak RSS with the same list (bench/p4-bigqueue.py)
#   P5 an idle daemon's wake-ups (poll calls by strace) over BENCH_P5_SECONDS (30) (bench/p5-idle.sh)
#   P6 BENCH_P6_JOBS (8000) jobs on one host, total 4, per_host 2, fsync off: CPU time; curl and aria2c
#      fetching the same two at a time (bench/p6-scheduler.sh)
#   P7 one BENCH_P7_MB (512) MiB file to disk from an nginx location with `limit_rate 8m` (per
#      connection): split=8 against one connection and against `aria2c -x8 -s8 -k1M`; and unthrottled,
#      split=8 against one connection (bench/p7-split.sh)
#   ratelimit: bench/ratelimit.sh
#   P8 (opt-in: BENCH_ONLY=p8) BENCH_P8_JOBS (200000; 1000000 as issue 38 asks needs ~9 GiB of tmpfs)
#      finished jobs on tmpfs: status and status --json warm, the full scan they replace, agent
#      start-up and its retention pass (longest loop turn), purge of 90 % (bench/p8-history.py)
# Each case runs BENCH_WARMUP (1, P1/P2/P6 only) unmeasured and BENCH_REPEAT (3) measured times,
# tools interleaved; the tables show medians. Every P1/P2 run's output is verified.
# Environment: DROPFETCH (binary), CURL (the curl compared against; default bench/out/curl8/curl,
# the curl 8 of bench/curl8.sh, when there is one, else curl), BENCH_ONLY (comma list of p1..p7,
# ratelimit; big = p1, small = p2), BENCH_REPEAT, BENCH_WARMUP, BENCH_DISK (/var/tmp), BENCH_BIG_MB,
# BENCH_SMALL_COUNT, BENCH_P3_DROPS, BENCH_P3_LOAD, BENCH_P3_REPEAT, BENCH_P4_JOBS, BENCH_P5_SECONDS,
# BENCH_P5_REPEAT, BENCH_P6_JOBS, BENCH_RATE, BENCH_RATE_MB, BENCH_P7_MB, BENCH_P7_REPEAT, BENCH_P8_JOBS, BENCH_RESULTS
# (bench/RESULTS.md; empty: not written).
set -euo pipefail
export LC_ALL=C
umask 022
shopt -s nullglob

ORIG_PWD=$PWD
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

user_dropfetch=${DROPFETCH:-}
DROPFETCH=${DROPFETCH:-.build/release/dropfetch}
if [[ -n $user_dropfetch && $DROPFETCH != /* && ! -e $DROPFETCH && -e $ORIG_PWD/$DROPFETCH ]]; then
    DROPFETCH=$ORIG_PWD/$DROPFETCH
fi
DROPFETCH=$(realpath -m -- "$DROPFETCH")
if [[ -z ${CURL:-} ]]; then CURL=curl; [[ -x bench/out/curl8/curl ]] && CURL=$ROOT/bench/out/curl8/curl; fi
[[ $CURL == */* ]] && CURL=$(cd "$ORIG_PWD" && realpath -ms -- "$CURL")

BENCH_ONLY=${BENCH_ONLY:-}
BENCH_REPEAT=${BENCH_REPEAT:-3}
BENCH_WARMUP=${BENCH_WARMUP:-1}
BENCH_DISK=${BENCH_DISK:-/var/tmp}
BENCH_BIG_MB=${BENCH_BIG_MB:-2048}
BENCH_SMALL_COUNT=${BENCH_SMALL_COUNT:-5000}
BENCH_P3_DROPS=${BENCH_P3_DROPS:-200}
BENCH_P3_LOAD=${BENCH_P3_LOAD:-20000}
BENCH_P3_REPEAT=${BENCH_P3_REPEAT:-$BENCH_REPEAT}
BENCH_P4_JOBS=${BENCH_P4_JOBS:-100000}
BENCH_P5_SECONDS=${BENCH_P5_SECONDS:-30}
BENCH_P5_REPEAT=${BENCH_P5_REPEAT:-$BENCH_REPEAT}
BENCH_P6_JOBS=${BENCH_P6_JOBS:-8000}
BENCH_RATE_MB=${BENCH_RATE_MB:-4}
BENCH_P7_MB=${BENCH_P7_MB:-512}
BENCH_P7_REPEAT=${BENCH_P7_REPEAT:-$BENCH_REPEAT}
BENCH_P8_JOBS=${BENCH_P8_JOBS:-200000}
BENCH_RESULTS=${BENCH_RESULTS-$ROOT/bench/RESULTS.md}
SMALL_KIB=16
CONCURRENCY=16
OUT_DIR=$ROOT/bench/out

die() { printf 'bench: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'bench: %s\n' "$*" >&2; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]] && (( $1 > 0 )); }

CASES=()
for c in ${BENCH_ONLY//,/ }; do
    case $c in
        big) CASES+=(p1) ;; small) CASES+=(p2) ;;
        p1|p2|p3|p4|p5|p6|p7|p8|ratelimit) CASES+=("$c") ;;
        *) die "BENCH_ONLY: unknown case '$c' (p1 … p8, ratelimit; big, small)" ;;
    esac
done
(( ${#CASES[@]} )) || CASES=(p1 p2 p3 p4 p5 p6 p7 ratelimit)
want() { [[ " ${CASES[*]} " == *" $1 "* ]]; }

for v in BENCH_REPEAT BENCH_BIG_MB BENCH_SMALL_COUNT BENCH_P3_DROPS BENCH_P3_REPEAT BENCH_P4_JOBS \
         BENCH_P5_SECONDS BENCH_P5_REPEAT BENCH_P6_JOBS BENCH_RATE_MB BENCH_P7_MB BENCH_P7_REPEAT BENCH_P8_JOBS; do
    is_uint "${!v}" || die "$v must be a positive integer"
done
[[ $BENCH_WARMUP =~ ^[0-9]+$ ]] || die "BENCH_WARMUP must be a non-negative integer"
[[ $BENCH_P3_LOAD =~ ^[0-9]+$ ]] || die "BENCH_P3_LOAD must be a non-negative integer"

PATH=$PATH:/usr/sbin:/sbin
command -v nginx >/dev/null || die "nginx not found (make bench installs it)"
command -v "$CURL" >/dev/null || die "curl not found at '$CURL' (make bench installs it)"
CURL_VERSION=$("$CURL" --version 2>/dev/null | head -n 1 | cut -d' ' -f1-2)
[[ $CURL_VERSION == "curl "* ]] || die "CURL=$CURL is not a working curl"
command -v python3 >/dev/null || die "python3 not found"
[[ -x /usr/bin/time ]] || die "/usr/bin/time not found (make bench installs it)"
HAVE_ARIA2=0; command -v aria2c >/dev/null && HAVE_ARIA2=1
[[ -x $DROPFETCH ]] || die "no dropfetch at $DROPFETCH (build with 'make release' or set DROPFETCH=...)"
say "comparing against $CURL_VERSION ($CURL)"
(( HAVE_ARIA2 )) || say "aria2c not found: its figures are skipped (make bench installs it)"
if want p5 && ! command -v strace >/dev/null; then say "strace not found: P5 is skipped (make bench installs it)"; fi

# ---------------------------------------------------------------- workspaces

T=""; D=""; MOUNTED=0; NGINX_PID=""
cleanup() {
    local rc=$?
    if [[ -n $NGINX_PID ]] && kill -0 "$NGINX_PID" 2>/dev/null; then
        kill -TERM "$NGINX_PID" 2>/dev/null || true
        for _ in {1..50}; do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$NGINX_PID" 2>/dev/null || true
        wait "$NGINX_PID" 2>/dev/null || true
    fi
    [[ -n $D && -d $D ]] && rm -rf -- "$D"
    if [[ -n $T && -d $T ]]; then
        if (( MOUNTED )); then
            umount "$T" 2>/dev/null || umount -l "$T" 2>/dev/null || say "could not unmount $T"
            rmdir "$T" 2>/dev/null || true
        else
            rm -rf -- "$T"
        fi
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# tmpfs: the served data (big file, small files), nginx, the P1 tmpfs output, P4 and P6.
need_t=256
want p1 && need_t=$(( need_t + 2 * BENCH_BIG_MB ))
want p2 && need_t=$(( need_t + BENCH_SMALL_COUNT * (SMALL_KIB + 4) / 1024 + 1 ))
want p4 && need_t=$(( need_t + BENCH_P4_JOBS / 200 + 64 ))
want p6 && need_t=$(( need_t + 2 * BENCH_P6_JOBS * (SMALL_KIB + 8) / 1024 + 1 ))
want ratelimit && need_t=$(( need_t + 4 * BENCH_RATE_MB ))
want p7 && need_t=$(( need_t + BENCH_P7_MB ))
# Two files a job, a page each, and their inodes and dentries.
want p8 && need_t=$(( need_t + BENCH_P8_JOBS * 9 / 1024 + 64 ))
if (( EUID == 0 )); then
    T=$(mktemp -d /tmp/dropfetch-bench-tmpfs.XXXXXX)
    if mount -t tmpfs -o "size=${need_t}m,mode=0755" dropfetch-bench "$T" 2>/dev/null; then
        MOUNTED=1
    else
        rmdir "$T"; T=""
    fi
fi
if [[ -z $T ]]; then
    [[ -d /dev/shm && -w /dev/shm ]] || die "no tmpfs available (not root, no writable /dev/shm)"
    T=$(mktemp -d /dev/shm/dropfetch-bench.XXXXXX)
fi
chmod 0755 "$T"
mem_avail_mb=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
(( mem_avail_mb >= need_t + 256 )) || die "the tmpfs workspace needs ~${need_t} MiB of RAM, ${mem_avail_mb} MiB available; lower BENCH_BIG_MB"

# descriptors: the agent gets the hard limit a systemd service has (LimitNOFILE 524,288; it raises
# its soft limit to it) where this shell may raise its own that far; the soft limit stays. Under a
# lower hard limit, P3's 20,000 jobs with fsync on can hold the agent near it (a finish keeps its part
# open until its batch is synced), and a job dropped then waits for a batch (docs/architecture.md).
(( $(ulimit -Hn) >= 524288 )) 2>/dev/null || ulimit -Hn 524288 2>/dev/null || true
NOFILE="$(ulimit -Sn) soft, $(ulimit -Hn) hard"

# disk: every download and spool where fsync costs what it costs for users.
mkdir -p -- "$BENCH_DISK"
D=$(mktemp -d "$(realpath -- "$BENCH_DISK")/dropfetch-bench.XXXXXX")
DISK_FS=$(findmnt -no FSTYPE -T "$D" 2>/dev/null || stat -f -c %T "$D")
DISK_SRC=$(findmnt -no SOURCE -T "$D" 2>/dev/null || echo "?")
case $DISK_FS in
    tmpfs|ramfs) say "WARNING: BENCH_DISK $BENCH_DISK is on $DISK_FS: fsync is free there and the fsync figures mean nothing" ;;
esac
need_d=64
want p1 && need_d=$(( need_d + BENCH_BIG_MB ))
# P2 keeps every run's files until the bench ends (see P2_DIR): five tools, warm-up and measured
# runs, and the floor's three modes.
want p2 && need_d=$(( need_d + (5 * (BENCH_WARMUP + BENCH_REPEAT) + 3 * BENCH_REPEAT) * BENCH_SMALL_COUNT * (SMALL_KIB + 12) / 1024 ))
want p3 && need_d=$(( need_d + BENCH_P3_LOAD * (SMALL_KIB + 8) / 1024 ))
want p7 && need_d=$(( need_d + BENCH_P7_MB ))
avail_d=$(( $(df -P -k -- "$D" | awk 'NR == 2 { print $4 }') / 1024 ))
(( avail_d >= need_d )) || die "$D has ${avail_d} MiB free, needs ${need_d} MiB"
say "served from tmpfs $T; downloads and spools on $D ($DISK_FS on $DISK_SRC)"
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

WWW=$T/www; NG=$T/nginx; LOGS=$T/logs
mkdir -p "$WWW/small" "$NG/tmp" "$LOGS"

# ---------------------------------------------------------------- test data

BIG_SHA=""; SMALL_SHA=""; SMALL_NAMES=()
tree_sha() { (cd "$1" && printf '%s\0' *.bin | xargs -0 -r cat | sha256sum | cut -d' ' -f1); }

if want p1; then
    say "creating big.bin (${BENCH_BIG_MB} MiB of random data)"
    head -c $(( BENCH_BIG_MB * 1048576 )) /dev/urandom > "$WWW/big.bin"
    BIG_SHA=$(sha256sum "$WWW/big.bin" | cut -d' ' -f1)
fi
P7_SHA=""
if want p7; then
    say "creating p7.bin (${BENCH_P7_MB} MiB of random data)"
    head -c $(( BENCH_P7_MB * 1048576 )) /dev/urandom > "$WWW/p7.bin"
    P7_SHA=$(sha256sum "$WWW/p7.bin" | cut -d' ' -f1)
fi
if want p2 || want p3 || want p6; then
    say "creating ${BENCH_SMALL_COUNT} files of ${SMALL_KIB} KiB"
    head -c $(( BENCH_SMALL_COUNT * SMALL_KIB * 1024 )) /dev/urandom > "$T/blob"
    split -b "${SMALL_KIB}K" -d -a "${#BENCH_SMALL_COUNT}" --additional-suffix=.bin "$T/blob" "$WWW/small/f"
    rm -f "$T/blob"
    made=("$WWW"/small/*.bin)
    (( ${#made[@]} == BENCH_SMALL_COUNT )) || die "split made ${#made[@]} files, expected $BENCH_SMALL_COUNT"
    SMALL_SHA=$(tree_sha "$WWW/small")
    SMALL_NAMES=("${made[@]##*/}")
    printf '%s\n' "${SMALL_NAMES[@]}" > "$T/small-names.txt"
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
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && continue
    cat > "$NG/nginx.conf" <<NGINX
daemon off;
worker_processes auto;
pid "$NG/nginx.pid";
error_log "$NG/error.log" warn;
events { worker_connections 4096; }
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
        # P7: the same files at 8 MiB/s per connection, as a server that caps each connection.
        location /limited/ { alias "$WWW/"; limit_rate 8m; }
    }
}
NGINX
    nginx -p "$NG" -c "$NG/nginx.conf" "${nginx_e[@]}" >>"$NG/stdout.log" 2>&1 &
    NGINX_PID=$!
    for _ in {1..100}; do
        kill -0 "$NGINX_PID" 2>/dev/null || break
        if [[ $("$CURL" -s --max-time 1 "http://127.0.0.1:$port/ping.txt" 2>/dev/null) == "$TOKEN" ]]; then
            PORT=$port; break
        fi
        sleep 0.05
    done
    [[ -n $PORT ]] && break
    kill -TERM "$NGINX_PID" 2>/dev/null || true; wait "$NGINX_PID" 2>/dev/null || true; NGINX_PID=""
done
[[ -n $PORT ]] || { cat "$NG/error.log" "$NG/stdout.log" >&2 2>/dev/null || true; die "nginx did not start"; }
BASE=http://127.0.0.1:$PORT
say "nginx $(nginx -v 2>&1 | sed 's/.*\///') on $BASE (pid $NGINX_PID)"

# ---------------------------------------------------------------- measuring

declare -A V=()   # "key" -> space-separated figures of the measured runs
add() { V[$1]+="$2 "; }
now() { local t=${EPOCHREALTIME:-}; [[ -n $t ]] && printf '%s' "${t/,/.}" || date +%s.%N; }
# median KEY: the median of KEY's figures, or empty; max KEY likewise.
median() {
    [[ -n ${V[$1]:-} ]] || return 0
    # shellcheck disable=SC2086
    printf '%s\n' ${V[$1]} | grep -v nan | sort -g |
        awk '{ a[NR] = $1 } END { if (NR) printf "%.3f", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }' |
        sed -E 's/\.?0+$//'
}
maximum() {
    [[ -n ${V[$1]:-} ]] || return 0
    # shellcheck disable=SC2086
    printf '%s\n' ${V[$1]} | grep -v nan | sort -g | tail -n 1
}
# field LINE NAME: the value of NAME=... in a `Px key=value ...` line.
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -n 1; }

fail_run() {
    say "FAILED $1: $3"
    if [[ -s $2 ]]; then say "last lines of $1's output:"; tail -n 20 "$2" >&2; fi
    exit 1
}

# timed LOG CMD...: runs CMD with its output in LOG; sets ELAPSED (seconds) and RC.
timed() {
    local log=$1 t0 t1; shift
    t0=$(now)
    if "$@" >"$log" 2>&1; then RC=0; else RC=$?; fi
    t1=$(now)
    ELAPSED=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
}

# contract_floor CURL SPOOL CURL_FILES: curl's run plus what the contract's file work costs beyond
# curl's one file a job (protocol-floor's spool mode minus its curl mode), in seconds.
contract_floor() { awk -v c="$1" -v s="$2" -v f="$3" 'BEGIN { printf "%.3f", c + s - f }'; }

# curl_list OUT: $T/curl.list, curl's config for the small files, each written into OUT.
curl_list() {
    local name
    for name in "${SMALL_NAMES[@]}"; do
        printf 'url = "%s/small/%s"\noutput = "%s/%s"\n' "$BASE" "$name" "$1" "$name"
    done > "$T/curl.list"
}

# measure_floor KEY DIR JOBS keep|remove MODE...: the file work the spool contract asks of each job,
# alone (no download, no agent), beside curl's one file a job (bench/protocol-floor.c), BENCH_REPEAT
# times in fresh folders DIR-MODE-RUN, each removed after its run or kept for the caller to remove;
# each run's seconds are added as KEY|MODE. Skipped without a C compiler.
measure_floor() {
    local key=$1 dir=$2 jobs=$3 keep=$4 r mode line; shift 4
    local floor=$ROOT/bench/out/protocol-floor
    if [[ ! -x $floor || $floor -ot $ROOT/bench/protocol-floor.c ]]; then
        local cc
        cc=$(command -v "${CC:-cc}" || command -v gcc || command -v clang) ||
            { say "no C compiler (cc, gcc, clang): the spool contract's floor is not measured"; return 0; }
        mkdir -p "$ROOT/bench/out"
        "$cc" -O2 -o "$floor" "$ROOT/bench/protocol-floor.c" ||
            { say "bench/protocol-floor.c did not compile: the spool contract's floor is not measured"; return 0; }
    fi
    for (( r = 1; r <= BENCH_REPEAT; r++ )); do
        for mode in "$@"; do
            line=$("$floor" "$mode" "$dir-$mode-$r" "$jobs") ||
                { say "protocol-floor $mode failed: the spool contract's floor is not measured"; return 0; }
            add "$key|$mode" "$(field "$line" seconds)"
            [[ $keep == keep ]] || rm -rf -- "$dir-$mode-$r"
        done
    done
}

yaml_str() { printf "'%s'" "${1//\'/\'\'}"; }

# Does this build take `digest: none`? (P1 on tmpfs is measured with it when it does.)
DIGEST_NONE=0
mkdir -p "$D/check"
printf 'spool: %s\ndigest: none\n' "$(yaml_str "$D/check/spool")" > "$D/check/config.yaml"
"$DROPFETCH" check --config "$D/check/config.yaml" >/dev/null 2>&1 && DIGEST_NONE=1
rm -rf -- "$D/check"

# verify_out KEY LOG SCENARIO OUT: OUT holds exactly the expected files with the expected content.
verify_out() {
    local key=$1 log=$2 scenario=$3 out=$4 files got
    files=("$out"/*)
    if [[ $scenario == big ]]; then
        (( ${#files[@]} == 1 )) && [[ -f $out/big.bin ]] ||
            fail_run "$key" "$log" "expected exactly big.bin in the output, found ${#files[@]} entries: ${files[*]##*/}"
        got=$(sha256sum "$out/big.bin" | cut -d' ' -f1)
        [[ $got == "$BIG_SHA" ]] || fail_run "$key" "$log" "big.bin sha256 $got, expected $BIG_SHA"
    else
        local bins=("$out"/*.bin)
        (( ${#files[@]} == BENCH_SMALL_COUNT && ${#bins[@]} == BENCH_SMALL_COUNT )) ||
            fail_run "$key" "$log" "expected $BENCH_SMALL_COUNT files, found ${#bins[@]} .bin of ${#files[@]} entries"
        got=$(tree_sha "$out")
        [[ $got == "$SMALL_SHA" ]] || fail_run "$key" "$log" "the small files' contents differ from the source"
    fi
}

# dropfetch_prepare SCENARIO FSYNC DIR OUT DIGEST: a fresh spool in DIR with the jobs, and its config.
dropfetch_prepare() {
    local scenario=$1 fsync=$2 dir=$3 out=$4 digest=$5 name
    rm -rf -- "$dir/spool"
    mkdir -p "$dir/spool/inbox"
    {
        printf 'spool: %s\ndestination: %s\n' "$(yaml_str "$dir/spool")" "$(yaml_str "$out")"
        printf 'concurrency: { total: %d, per_host: %d }\nfsync: %s\nlog_level: warning\n' "$CONCURRENCY" "$CONCURRENCY" "$fsync"
        printf 'metrics_file: %s\n' "$(yaml_str "$dir/metrics.prom")"
        [[ $digest == none ]] && printf 'digest: none\n'
    } > "$dir/config.yaml"
    rm -f -- "$dir/metrics.prom"
    if [[ $scenario == big ]]; then
        printf '%s/big.bin\n  out=big.bin\n' "$BASE" > "$dir/spool/inbox/big.url"
    else
        for name in "${SMALL_NAMES[@]}"; do
            printf '%s/small/%s\n  out=%s\n' "$BASE" "$name" "$name" > "$dir/spool/inbox/${name%.bin}.url"
        done
    fi
    # Job files written a minute ago: settled, so `run --once` does not wait to see them stop changing.
    find "$dir/spool/inbox" -name '*.url' -exec touch -d '1 minute ago' {} +
}

# dropfetch_verify KEY LOG SCENARIO DIR: exit status 0, every job filed in done/, none left elsewhere.
dropfetch_verify() {
    local key=$1 log=$2 scenario=$3 dir=$4 expected=1 done failed inbox
    [[ $scenario == small ]] && expected=$BENCH_SMALL_COUNT
    (( RC == 0 )) || fail_run "$key" "$log" "exit status $RC"
    done=("$dir"/spool/done/*.url); failed=("$dir"/spool/failed/*.url); inbox=("$dir"/spool/inbox/*.url)
    (( ${#done[@]} == expected && ${#failed[@]} == 0 && ${#inbox[@]} == 0 )) ||
        fail_run "$key" "$log" "spool: ${#done[@]} done (expected $expected), ${#failed[@]} failed, ${#inbox[@]} still in inbox"
}

# run_transfer CASE TOOL R: one P1/P2 run of TOOL, verified; a measured one (R >= 1) is recorded.
run_transfer() {
    local case=$1 tool=$2 r=$3 key="$1|$2" log="$LOGS/${1}-${2// /_}-$3.log" scenario=small place=$D out
    [[ $case == p1* ]] && scenario=big
    [[ $case == p1-tmpfs ]] && place=$T
    if [[ $scenario == small ]]; then
        P2_RUNS=$(( ${P2_RUNS:-0} + 1 ))
        place=$P2_DIR/run$P2_RUNS
    fi
    out=$place/out
    rm -rf -- "$out" "$place/df"; mkdir -p "$out" "$place/df"
    # Nothing of the previous run is left to write back during this one.
    sync
    case "$scenario:$tool" in
        big:curl) timed "$log" "$CURL" -s --fail -o "$out/big.bin" "$BASE/big.bin" ;;
        small:curl) curl_list "$out"; timed "$log" "$CURL" -s --fail --parallel --parallel-max "$CONCURRENCY" -K "$T/curl.list" ;;
        # What dropfetch's fsync promises, for curl: its files synced after it (syncfs(2) of their
        # file system, timed with the transfers).
        small:"curl + sync") curl_list "$out"; timed "$log" bash -c '"$1" -s --fail --parallel --parallel-max "$2" -K "$3" && sync -f "$4"' \
            _ "$CURL" "$CONCURRENCY" "$T/curl.list" "$out" ;;
        big:"curl + sync") timed "$log" bash -c '"$1" -s --fail -o "$2/big.bin" "$3" && sync -f "$2"' _ "$CURL" "$out" "$BASE/big.bin" ;;
        big:aria2c)
            timed "$log" aria2c -x1 -s1 --file-allocation=none -q --show-console-readout=false \
                --summary-interval=0 -d "$out" -o big.bin "$BASE/big.bin" ;;
        small:aria2c)
            timed "$log" aria2c -i "$T/aria2.list" -j"$CONCURRENCY" --file-allocation=none -q \
                --show-console-readout=false --summary-interval=0 -d "$out" ;;
        *:dropfetch*)
            local fsync=true digest=sha256
            [[ $tool == *"fsync off"* ]] && fsync=false
            [[ $tool == *"digest none"* ]] && digest=none
            dropfetch_prepare "$scenario" "$fsync" "$place/df" "$out" "$digest"
            sync
            timed "$log" "$DROPFETCH" run --once --config "$place/df/config.yaml"
            dropfetch_verify "$key" "$log" "$scenario" "$place/df" ;;
        *) die "unknown run $key" ;;
    esac
    [[ $tool == dropfetch* ]] || (( RC == 0 )) || fail_run "$key" "$log" "exit status $RC"
    verify_out "$key" "$log" "$scenario" "$out"
    if (( r >= 1 )); then
        add "$key" "$ELAPSED"
        if [[ $tool == "dropfetch" && $case == p2 && -f $place/df/metrics.prom ]]; then
            local stall
            stall=$(awk '/^dropfetch_loop_stall_seconds/ { print $2 }' "$place/df/metrics.prom")
            [[ -n $stall ]] && add "p2|stall" "$stall"
        fi
        say "$(printf '%-9s %-24s run %d/%d: %8.3f s' "$case" "$tool" "$r" "$BENCH_REPEAT" "$ELAPSED")"
    else
        say "$(printf '%-9s %-24s warm-up: %8.3f s' "$case" "$tool" "$ELAPSED")"
    fi
}

tools_for() {
    local t=(curl)
    (( HAVE_ARIA2 )) && t+=(aria2c)
    case $1 in
        p1-disk) t+=("curl + sync" "dropfetch") ;;
        p1-tmpfs) if (( DIGEST_NONE )); then t+=("dropfetch digest none"); else t+=("dropfetch"); fi ;;
        p2) t+=("curl + sync" "dropfetch" "dropfetch fsync off") ;;
    esac
    printf '%s\n' "${t[@]}"
}

transfer_case() {
    local case=$1 tools r tool
    mapfile -t tools < <(tools_for "$case")
    for (( r = 1 - BENCH_WARMUP; r <= BENCH_REPEAT; r++ )); do
        for tool in "${tools[@]}"; do run_transfer "$case" "$tool" "$r"; done
    done
}

if want p1; then
    transfer_case p1-disk
    transfer_case p1-tmpfs
    rm -rf -- "$D/out" "$T/out" "$D/df" "$T/df"
fi
if want p2; then
    # Each P2 run in a fresh folder, none deleted until the bench ends, each in an inode group of its
    # own (chattr +T: ext4's allocator spreads the folders made in this one, as it does those at the
    # root): ext4 without a journal (this VM's disk) skips every inode freed in the last 60 s (360 s
    # while its table block is dirty) when it allocates one (find_inode_bit, recently_deleted: a
    # buffer-cache lookup each), so files deleted in the same group minutes before, by the run
    # before or anything else, made each file a run created walk past them: curl's 5,000 files
    # took 2.3-3 s instead of 0.3 s, dropfetch's two a job twice that.
    P2_DIR=$D/p2
    mkdir -p "$P2_DIR"
    chattr +T "$P2_DIR" 2>/dev/null || say "P2: chattr +T $P2_DIR failed (not ext4?): its runs share inode groups"
    : > "$T/aria2.list"
    for name in "${SMALL_NAMES[@]}"; do
        printf '%s/small/%s\n  out=%s\n' "$BASE" "$name" "$name" >> "$T/aria2.list"
    done
    transfer_case p2
    # The floor under P2, in fresh folders like the runs. Nothing of P2 is deleted before the bench
    # ends: the cases after it would walk past its freed inodes.
    measure_floor p2-floor "$P2_DIR/floor" "$BENCH_SMALL_COUNT" keep curl spool spoolsync
    # Their writeback done now, not during the cases after (P6 measured 20 % more CPU, aria2c too).
    sync
fi

# script_run LABEL CMD...: runs a case script; its `Px key=value ...` line lands in LINE.
LINE=""
script_run() {
    local label=$1 log; shift
    log="$LOGS/$label.log"
    if ! LINE=$("$@" 2>"$log" | tail -n 1); then
        fail_run "$label" "$log" "the case script failed"
    fi
    say "$label: $LINE"
}

if want p3; then
    for (( r = 1; r <= BENCH_P3_REPEAT; r++ )); do
        loads=(0); (( BENCH_P3_LOAD > 0 )) && loads+=("$BENCH_P3_LOAD")
        for load in "${loads[@]}"; do
            w=$D/p3; rm -rf -- "$w"; mkdir -p "$w"; sync
            script_run "p3-load$load-$r" env DROPFETCH="$DROPFETCH" WORK="$w" DROPS="$BENCH_P3_DROPS" LOAD="$load" \
                LOAD_BASE="$BASE" LOAD_NAMES="$T/small-names.txt" python3 "$ROOT/bench/p3-latency.py"
            k=p3-idle; (( load > 0 )) && k=p3-load
            add "$k|p50" "$(field "$LINE" p50_ms)"; add "$k|p99" "$(field "$LINE" p99_ms)"
            add "$k|max" "$(field "$LINE" max_ms)"; add "$k|drops" "$(field "$LINE" drops)"
        done
    done
    rm -rf -- "$D/p3"
fi

if want p4; then
    for (( r = 1; r <= BENCH_REPEAT; r++ )); do
        w=$T/p4; rm -rf -- "$w"; mkdir -p "$w"
        script_run "p4-dropfetch-$r" env DROPFETCH="$DROPFETCH" WORK="$w" JOBS="$BENCH_P4_JOBS" python3 "$ROOT/bench/p4-bigqueue.py"
        add "p4|top" "$(field "$LINE" top_s)"; add "p4|rss" "$(field "$LINE" peak_rss_mib)"
    done
    if (( HAVE_ARIA2 )); then
        w=$T/p4; rm -rf -- "$w"; mkdir -p "$w"
        script_run "p4-aria2c" env DROPFETCH="$DROPFETCH" WORK="$w" JOBS="$BENCH_P4_JOBS" TOOL=aria2c python3 "$ROOT/bench/p4-bigqueue.py"
        add "p4|aria2c-rss" "$(field "$LINE" peak_rss_mib)"
    fi
    rm -rf -- "$T/p4"
fi

if want p8; then
    w=$T/p8; rm -rf -- "$w"; mkdir -p "$w"
    script_run "p8" env DROPFETCH="$DROPFETCH" WORK="$w" JOBS="$BENCH_P8_JOBS" python3 "$ROOT/bench/p8-history.py"
    for k in status_ms status_json_ms scan_ms startup_ms startup_pass_s stall_ms purged purge_s purge_cpu_s status_after_ms; do
        add "p8|$k" "$(field "$LINE" "$k")"
    done
    rm -rf -- "$w"
fi

if want p5 && command -v strace >/dev/null; then
    for (( r = 1; r <= BENCH_P5_REPEAT; r++ )); do
        w=$D/p5; rm -rf -- "$w"; mkdir -p "$w"
        script_run "p5-$r" env DROPFETCH="$DROPFETCH" WORK="$w" SECS="$BENCH_P5_SECONDS" "$ROOT/bench/p5-idle.sh"
        add "p5|polls" "$(field "$LINE" polls)"; add "p5|cpu" "$(field "$LINE" cpu_ms)"
        P5_BY_NAME=$(field "$LINE" by_name)
    done
    rm -rf -- "$D/p5"
fi

if want p6; then
    p6_tools=(dropfetch curl); (( HAVE_ARIA2 )) && p6_tools+=(aria2c)
    for (( r = 1 - BENCH_WARMUP; r <= BENCH_REPEAT; r++ )); do
        for tool in "${p6_tools[@]}"; do
            w=$T/p6; rm -rf -- "$w"; mkdir -p "$w"
            script_run "p6-$tool-$r" env DROPFETCH="$DROPFETCH" WORK="$w" BASE="$BASE" NAMES="$T/small-names.txt" \
                JOBS="$BENCH_P6_JOBS" TOOL="$tool" CURL="$CURL" "$ROOT/bench/p6-scheduler.sh"
            [[ $(field "$LINE" files) == "$BENCH_P6_JOBS" ]] || fail_run "p6-$tool-$r" "$LOGS/p6-$tool-$r.log" "not every file was downloaded: $LINE"
            (( r >= 1 )) && add "p6|$tool" "$(field "$LINE" cpu_s)"
            (( r >= 1 )) && [[ $tool == dropfetch ]] && add "p6|wall" "$(field "$LINE" wall_s)"
        done
    done
    rm -rf -- "$T/p6"
    # The floor under P6 on its tmpfs, where the file work is all CPU (its wall time).
    measure_floor p6-floor "$T/p6-floor" "$BENCH_P6_JOBS" remove curl spool checks
fi

if want p7; then
    # tool:split:location[:none]; the unthrottled pair last, so that the throttled runs see a quiet
    # disk. `none`: digest: none, which shows what the sha256 costs beside aria2c (which has none).
    p7_runs=(dropfetch:8:limited dropfetch:1:limited)
    (( HAVE_ARIA2 )) && p7_runs+=(aria2c:8:limited)
    (( DIGEST_NONE )) && p7_runs+=(dropfetch:8:limited:none)
    p7_runs+=(dropfetch:8:open dropfetch:1:open)
    (( DIGEST_NONE )) && p7_runs+=(dropfetch:8:open:none dropfetch:1:open:none)
    for (( r = 1; r <= BENCH_P7_REPEAT; r++ )); do
        for run in "${p7_runs[@]}"; do
            IFS=: read -r tool split where digest <<<"$run"
            url=$BASE/p7.bin; [[ $where == limited ]] && url=$BASE/limited/p7.bin
            w=$D/p7; rm -rf -- "$w"; mkdir -p "$w"; sync
            label="p7-$tool-$split-$where${digest:+-$digest}-$r"
            script_run "$label" env DROPFETCH="$DROPFETCH" WORK="$w" URL="$url" SHA="$P7_SHA" \
                TOOL="$tool" SPLIT="$split" DIGEST="${digest:-sha256}" "$ROOT/bench/p7-split.sh"
            [[ $(field "$LINE" ok) == 1 ]] || fail_run "$label" "$w/log" "wrong file or exit status: $LINE"
            add "p7-$where|$tool-$split${digest:+-$digest}" "$(field "$LINE" wall_s)"
            [[ $tool == dropfetch ]] && add "p7-$where|$tool-$split${digest:+-$digest}-connections" "$(field "$LINE" connections)"
        done
    done
    rm -rf -- "$D/p7"
fi

RATE_LINE=""
if want ratelimit; then
    RATE_LINE=$(DROPFETCH="$DROPFETCH" CURL="$CURL" BENCH_RATE_MB="$BENCH_RATE_MB" "$ROOT/bench/ratelimit.sh" "$BASE" "$WWW" "$T/ratelimit")
fi
LOAD_END=$(cut -d' ' -f1-3 /proc/loadavg)

# ---------------------------------------------------------------- report

# ratio A B: A / B to two places, or empty.
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b }'; }
# check VALUE OP LIMIT: "met" or "MISSED" (or "-" with no value).
check() { [[ -n $1 ]] || { printf -- '-'; return; }; awk -v v="$1" -v l="$3" -v op="$2" 'BEGIN { ok = (op == "<=") ? v <= l : v < l; printf ok ? "met" : "MISSED" }'; }
s() { [[ -n $1 ]] && printf '%s s' "$1" || printf -- '-'; }
ms() { [[ -n $1 ]] && printf '%s ms' "$1" || printf -- '-'; }
mib() { [[ -n $1 ]] && printf '%s MiB' "$1" || printf -- '-'; }

ROWS=()   # case|measure|dropfetch|target|curl|aria2c|result
row() { ROWS+=("$1|$2|$3|$4|$5|$6|$7"); }

if want p1; then
    for place in disk tmpfs; do
        dftool=dropfetch
        [[ $place == tmpfs ]] && (( DIGEST_NONE )) && dftool="dropfetch digest none"
        d=$(median "p1-$place|$dftool"); c=$(median "p1-$place|curl"); a=$(median "p1-$place|aria2c")
        rc=$(ratio "$d" "$c"); lim=1.05; [[ $place == tmpfs ]] && lim=1.02
        what="1 × ${BENCH_BIG_MB} MiB to $place, fsync on"
        if [[ $place == tmpfs ]]; then
            if (( DIGEST_NONE )); then what+=", digest none"; else what+=" (this build has no digest: none)"; fi
        fi
        row P1 "$what" "$(s "$d")" "≤ $lim × curl" "$(s "$c")" "$(s "$a")" "${rc:-?} × curl, $(ratio "$d" "$a") × aria2c: $(check "$rc" "<=" "$lim")"
        # dropfetch's time includes its fsync; curl's file is still being written back when curl
        # exits. The same file synced after curl (timed with it) is what fsync on promises.
        cs=$(median "p1-$place|curl + sync")
        [[ -n $cs ]] && row P1 "  same, against curl whose file is then synced (sync -f, timed with it; no target)" \
            "$(s "$d")" "-" "$(s "$cs")" "-" "$(ratio "$d" "$cs") × curl + sync"
    done
fi
if want p2; then
    d=$(median "p2|dropfetch"); c=$(median "p2|curl"); a=$(median "p2|aria2c"); o=$(median "p2|dropfetch fsync off")
    cs=$(median "p2|curl + sync")
    # Issue 34: fsync on against curl whose files are then synced (≤ 1.5 ×), fsync off against curl (≤ 1.3 ×).
    rc=$(ratio "$d" "$cs"); ra=$(ratio "$d" "$a")
    verdict=$(check "$rc" "<=" 1.5)
    [[ -n $ra ]] && [[ $(check "$ra" "<=" 0.5) == MISSED ]] && verdict=MISSED
    row P2 "${BENCH_SMALL_COUNT} × ${SMALL_KIB} KiB, c=$CONCURRENCY, fsync on, disk" "$(s "$d")" "≤ 1.5 × curl + sync, ≤ 0.5 × aria2c" \
        "$(s "$cs") (+ sync)" "$(s "$a")" "$rc × curl + sync ($(ratio "$d" "$c") × curl), $ra × aria2c: $verdict"
    ro=$(ratio "$o" "$c")
    row P2 "  same, fsync off" "$(s "$o")" "≤ 1.3 × curl" "$(s "$c")" "$(s "$a")" "$ro × curl, $(ratio "$o" "$a") × aria2c: $(check "$ro" "<=" 1.3)"
    fc=$(median "p2-floor|curl"); fs=$(median "p2-floor|spool"); fy=$(median "p2-floor|spoolsync")
    if [[ -n $fc && -n $fs && -n $fy ]]; then
        flo=$(contract_floor "$c" "$fs" "$fc"); fon=$(contract_floor "$c" "$fy" "$fc")
        row P2 "  the spool contract's floor: curl + its file work a job (bench/protocol-floor.c: spool $fs s, synced in batches $fy s, curl's files $fc s)" \
            "$(s "$flo") / $(s "$fon")" "-" "-" "-" "off: $(ratio "$flo" "$c") × curl; on: $(ratio "$fon" "$cs") × curl + sync"
    fi
    st=$(maximum "p2|stall"); stms=""; [[ -n $st ]] && stms=$(awk -v x="$st" 'BEGIN { printf "%.1f", x * 1000 }')
    row P2 "  longest loop turn (dropfetch_loop_stall_seconds, max of runs)" "$(ms "$stms")" "< 10 ms" "-" "-" \
        "$([[ -n $stms ]] && check "$stms" "<" 10 || echo "not in this build's metrics")"
fi
if want p8; then
    row P8 "${BENCH_P8_JOBS} finished jobs: status, warm (median of 5)" "$(ms "$(median "p8|status_ms")")" "≤ 100 ms" "-" "-" \
        "$(check "$(median "p8|status_ms")" "<=" 100)"
    row P8 "  status --json" "$(ms "$(median "p8|status_json_ms")")" "≤ 100 ms" "-" "-" "$(check "$(median "p8|status_json_ms")" "<=" 100)"
    row P8 "  status by the full scan (no journals; what it replaces)" "$(ms "$(median "p8|scan_ms")")" "-" "-" "-" "-"
    row P8 "  agent start-up (exec → agent started)" "$(ms "$(median "p8|startup_ms")")" "≤ 1000 ms" "-" "-" \
        "$(check "$(median "p8|startup_ms")" "<=" 1000)"
    row P8 "  start-up retention pass (reads every record, removes 1000)" "$(s "$(median "p8|startup_pass_s")")" "-" "-" "-" "-"
    row P8 "  longest loop turn meanwhile" "$(ms "$(median "p8|stall_ms")")" "< 10 ms" "-" "-" "$(check "$(median "p8|stall_ms")" "<" 10)"
    row P8 "  purge of $(median "p8|purged") records (CPU $(median "p8|purge_cpu_s") s)" "$(s "$(median "p8|purge_s")")" "≤ 60 s" "-" "-" \
        "$(check "$(median "p8|purge_s")" "<=" 60)"
fi
if want p3; then
    row P3 "drop → request, ${BENCH_P3_DROPS} drops, idle: p50 / p99 / max" \
        "$(median "p3-idle|p50") / $(median "p3-idle|p99") / $(median "p3-idle|max") ms" "p99 ≤ 5 ms" "-" "-" \
        "$(check "$(median "p3-idle|p99")" "<=" 5)"
    row P3 "  while ${BENCH_P3_LOAD} jobs run on another host ($(median "p3-load|drops") drops)" \
        "$(median "p3-load|p50") / $(median "p3-load|p99") / $(median "p3-load|max") ms" "p99 ≤ 20 ms" "-" "-" \
        "$(check "$(median "p3-load|p99")" "<=" 20)"
fi
if want p4; then
    row P4 "${BENCH_P4_JOBS} waiting jobs: top-priority request after" "$(s "$(median "p4|top")")" "≤ 3 s" "-" "-" \
        "$(check "$(median "p4|top")" "<=" 3)$( (( BENCH_P4_JOBS == 100000 )) || echo " (the target is for 100000)")"
    row P4 "  peak RSS" "$(mib "$(median "p4|rss")")" "≤ 64 MiB" "-" "$(mib "$(median "p4|aria2c-rss")")" \
        "$(check "$(median "p4|rss")" "<=" 64)$( (( BENCH_P4_JOBS == 100000 )) || echo " (the target is for 100000)")"
fi
if want p5 && [[ -n ${V["p5|polls"]:-} ]]; then
    due=$(( BENCH_P5_SECONDS / 30 ))
    row P5 "idle ${BENCH_P5_SECONDS} s: poll wake-ups (CPU $(median "p5|cpu") ms)" "$(median "p5|polls" | cut -d. -f1)" \
        "≤ $due (the rescan every 30 s)" "-" "-" "$(check "$(median "p5|polls")" "<=" "$due")"
fi
if want p6; then
    # Issue 34's bound: at most twice curl's CPU on the same files, two at a time.
    d=$(median "p6|dropfetch"); c=$(median "p6|curl"); r6=$(ratio "$d" "$c")
    row P6 "${BENCH_P6_JOBS} jobs, one host, total 4 / per_host 2: CPU (wall $(median "p6|wall") s)" "$(s "$d")" \
        "≤ 2 × curl" "$(s "$c")" "$(s "$(median "p6|aria2c")")" \
        "$r6 × curl, $(ratio "$d" "$(median "p6|aria2c")") × aria2c: $(check "$r6" "<=" 2)"
    fc=$(median "p6-floor|curl"); fs=$(median "p6-floor|spool")
    if [[ -n $fc && -n $fs && -n $c ]]; then
        flo=$(contract_floor "$c" "$fs" "$fc")
        row P6 "  the spool contract's floor: curl + its file work a job (bench/protocol-floor.c: spool $fs s, curl's files $fc s)" \
            "$(s "$flo")" "-" "-" "-" "$(ratio "$flo" "$c") × curl"
    fi
    fk=$(median "p6-floor|checks")
    if [[ -n $fc && -n $fk && -n $c ]]; then
        fl=$(contract_floor "$c" "$fk" "$fc")
        row P6 "  the same with dropfetch's checks and records a job as bare system calls (protocol-floor checks $fk s): the rest is its own computing" \
            "$(s "$fl")" "-" "-" "-" "$(ratio "$fl" "$c") × curl"
    fi
fi

if want p7; then
    s8=$(median "p7-limited|dropfetch-8"); s1=$(median "p7-limited|dropfetch-1"); a8=$(median "p7-limited|aria2c-8")
    ideal=$(awk -v x="$s1" 'BEGIN { if (x > 0) printf "%.3f", x / 8 }')
    r1=$(ratio "$s8" "$ideal")
    row P7 "1 × ${BENCH_P7_MB} MiB at limit_rate 8m, disk: split=8 ($(median "p7-limited|dropfetch-8-connections") connections) vs one connection ($(s "$s1"))" \
        "$(s "$s8")" "≤ 1.15 × (one ÷ 8 = $(s "$ideal"))" "-" "$(s "$a8")" "${r1:-?} × (one ÷ 8): $(check "$r1" "<=" 1.15)"
    ra=$(ratio "$s8" "$a8")
    row P7 "  same, split=8 vs aria2c -x8 -s8 -k1M (same run)" "$(s "$s8")" "≤ 1.0 × aria2c" "-" "$(s "$a8")" \
        "$([[ -n $ra ]] && echo "$ra × aria2c: $(check "$ra" "<=" 1.0)" || echo "no aria2c")"
    n8=$(median "p7-limited|dropfetch-8-none")
    [[ -n $n8 ]] && row P7 "  same, split=8 with digest: none (no sha256, like aria2c; no target)" "$(s "$n8")" "-" "-" "$(s "$a8")" \
        "$(ratio "$n8" "$a8") × aria2c"
    o8=$(median "p7-open|dropfetch-8"); o1=$(median "p7-open|dropfetch-1"); ro=$(ratio "$o8" "$o1")
    row P7 "  unthrottled (loopback): split=8 vs one connection ($(s "$o1"))" "$(s "$o8")" "≤ 1.05 × one connection" "-" "-" \
        "${ro:-?} × one connection: $(check "$ro" "<=" 1.05)"
    on8=$(median "p7-open|dropfetch-8-none"); on1=$(median "p7-open|dropfetch-1-none")
    [[ -n $on8 ]] && row P7 "  same, both with digest: none (no target)" "$(s "$on8")" "-" "-" "-" \
        "$(ratio "$on8" "$on1") × one connection ($(s "$on1"))"
fi

version_of() { "$@" 2>&1 | head -n 1 | cut -c1-70 || true; }
commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
mem=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)

table() {
    printf '| case | measure | dropfetch | target | curl | aria2c | result |\n|---|---|---|---|---|---|---|\n'
    local r
    for r in "${ROWS[@]}"; do printf '| %s |\n' "${r//|/ | }"; done
}
machine() {
    echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ); host $(uname -n), $(uname -srm)"
    echo "- CPU: ${cpu:-?}, $(nproc) cores; RAM $mem"
    echo "- load average (1/5/15 min): $LOAD_START at the start, $LOAD_END at the end"
    echo "- disk (downloads, spools): $DISK_FS on $DISK_SRC under $BENCH_DISK; served data: tmpfs"
    echo "- dropfetch $commit ($DROPFETCH); $CURL_VERSION ($CURL)$( (( HAVE_ARIA2 )) && echo "; $(version_of aria2c --version)"); nginx $(nginx -v 2>&1 | sed 's/.*\///')"
    echo "- open-files limit (ulimit -n) the tools ran under: $NOFILE"
    echo "- runs: warm-up $BENCH_WARMUP (P1, P2, P6), measured $BENCH_REPEAT (P3 $BENCH_P3_REPEAT, P5 $BENCH_P5_REPEAT, P7 $BENCH_P7_REPEAT); medians shown"
}
raw() {
    local k keys
    mapfile -t keys < <(printf '%s\n' "${!V[@]}" | sort)
    for k in "${keys[@]}"; do printf '    %-34s %s\n' "$k" "${V[$k]}"; done
}

mkdir -p "$OUT_DIR"
{
    echo "dropfetch bench"
    machine
    echo
    table
    [[ -n ${P5_BY_NAME:-} ]] && { echo; echo "P5 system calls of the last run: $P5_BY_NAME"; }
    [[ -n $RATE_LINE ]] && { echo; echo "$RATE_LINE"; }
    echo
    echo "figures of each measured run:"
    raw
} > "$OUT_DIR/results.txt"
echo
cat "$OUT_DIR/results.txt"

if [[ -n $BENCH_RESULTS ]]; then
    # The sections written by hand below the table (each issue's measurements) are kept.
    kept=""
    [[ -f $BENCH_RESULTS ]] && kept=$(awk '/^## /{found=1} found' "$BENCH_RESULTS")
    {
        echo "# Benchmark results"
        echo
        echo "The last run of \`make bench\` (bench/run.sh; cases: ${CASES[*]}). The machine was shared with other"
        echo "builds: see the load average, and read the figures as medians of noisy runs."
        echo
        machine
        echo
        table
        [[ -n ${P5_BY_NAME:-} ]] && { echo; echo "P5 system calls of the last run: \`$P5_BY_NAME\`"; }
        [[ -n $RATE_LINE ]] && { echo; echo "$RATE_LINE"; }
        echo
        echo "Figures of each measured run:"
        echo
        raw
        if [[ -n $kept ]]; then echo; echo "$kept"; fi
    } > "$BENCH_RESULTS.new"
    mv "$BENCH_RESULTS.new" "$BENCH_RESULTS"
    say "results written to ${BENCH_RESULTS#"$ROOT"/} and bench/out/results.txt"
fi

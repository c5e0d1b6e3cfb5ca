#!/usr/bin/env bash
# P7 (issue 26): one file (run.sh's p7.bin, BENCH_P7_MB MiB) fetched by one tool, to disk: the wall
# time of the command and whether the file is right. TOOL=dropfetch with SPLIT connections
# (`split=` in the job file, the config allowing 8 per host; fsync on, sha256 on), or TOOL=aria2c
# (`aria2c -x8 -s8 -k1M`). URL is the throttled (`limit_rate 8m`) or the unthrottled location.
# DIGEST=none runs dropfetch with `digest: none` (no sha256, as aria2c computes none).
# Environment: DROPFETCH (binary), WORK (an empty folder on disk), URL, SHA (the file's sha256),
# TOOL (dropfetch), SPLIT (8), DIGEST (sha256), LOG_LEVEL (info; debug adds hash_wait_ms, how long the
# digests of a split download took after its last byte). Prints one line: `P7 key=value ...`.
set -euo pipefail
TOOL=${TOOL:-dropfetch}; SPLIT=${SPLIT:-8}; DIGEST=${DIGEST:-sha256}; LOG_LEVEL=${LOG_LEVEL:-info}; d=$WORK
mkdir -p "$d/out"
now() { local t=${EPOCHREALTIME:-}; [[ -n $t ]] && printf '%s' "${t/,/.}" || date +%s.%N; }
case $TOOL in
    dropfetch)
        mkdir -p "$d/spool/inbox"
        printf '%s\n  out=p7.bin\n  split=%s\n' "$URL" "$SPLIT" > "$d/spool/inbox/p7.url"
        touch -d '1 minute ago' "$d/spool/inbox/p7.url"
        printf 'spool: %s/spool\ndestination: %s/out\nlog_level: %s\nconcurrency: { total: 8, per_host: 8 }\nsplit: { connections: 8 }\n' \
            "$d" "$d" "$LOG_LEVEL" > "$d/cfg.yaml"
        printf 'digest: %s\n' "$DIGEST" >> "$d/cfg.yaml"
        cmd=("$DROPFETCH" run --once --config "$d/cfg.yaml") ;;
    aria2c)
        cmd=(aria2c -x8 -s8 -k1M -q --file-allocation=none --show-console-readout=false --summary-interval=0
             -d "$d/out" -o p7.bin "$URL") ;;
    *) echo "P7 error=unknown-tool-$TOOL"; exit 1 ;;
esac
t0=$(now)
rc=0; "${cmd[@]}" >"$d/log" 2>&1 || rc=$?
t1=$(now)
got=$(sha256sum "$d/out/p7.bin" 2>/dev/null | cut -d' ' -f1 || true)
ok=0; [[ $rc == 0 && $got == "$SHA" ]] && ok=1
# dropfetch: the connections it split into, from its log (1 when it did not split).
connections=1
if [[ $TOOL == dropfetch ]]; then
    connections=$(sed -n 's/.*msg="download split".*connections=\([0-9]*\).*/\1/p' "$d/log" | head -n 1)
    connections=${connections:-1}
    hash_wait=$(sed -n 's/.*msg="split download hashed".*hash_wait_ms=\([0-9]*\).*/\1/p' "$d/log" | head -n 1)
fi
echo "P7 tool=$TOOL split=$SPLIT digest=$DIGEST wall_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') rc=$rc ok=$ok connections=$connections${hash_wait:+ hash_wait_ms=$hash_wait}"

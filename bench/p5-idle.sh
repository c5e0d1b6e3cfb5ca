#!/usr/bin/env bash
# P5: an idle daemon's wake-ups over SECS seconds: the waits (poll calls) strace sees return — each
# wake-up of the loop ends one poll and starts the next —, its CPU time, and its system calls by name.
# With the defaults the only due timer is the rescan every scan_interval (30 s).
# Environment: DROPFETCH (binary), WORK (an empty folder), SECS (30). Prints one line: `P5 key=value ...`.
set -euo pipefail
S=${SECS:-30}; d=$WORK
command -v strace >/dev/null || { echo "P5 error=no-strace"; exit 0; }
printf 'spool: %s/spool\nlog_level: warning\n' "$d" > "$d/cfg.yaml"
"$DROPFETCH" run --config "$d/cfg.yaml" 2>/dev/null & pid=$!
sleep 2
ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat"; }
t0=$(ticks)
timeout "$S" strace -f -c -p "$pid" -o "$d/strace.txt" 2>/dev/null || true
t1=$(ticks)
kill "$pid"; wait "$pid" || true
# A wait that returned: a poll call that ended within the window, or the one under way when strace
# attached, which ends as restart_syscall. The wait under way when strace detaches is not counted.
polls=$(awk '$NF ~ /^(poll|ppoll|epoll_wait|epoll_pwait|select|pselect6|restart_syscall)$/ { n += $4 } END { print n + 0 }' "$d/strace.txt")
calls=$(awk '$NF == "total" { print $4 }' "$d/strace.txt")
by_name=$(awk 'NR > 2 && $NF != "total" && $1 !~ /^-/ && NF >= 5 { printf "%s%s:%s", sep, $NF, $4; sep = "," }' "$d/strace.txt")
echo "P5 secs=$S polls=$polls cpu_ms=$(( (t1 - t0) * 1000 / $(getconf CLK_TCK) )) syscalls=${calls:-0} by_name=${by_name:-none}"

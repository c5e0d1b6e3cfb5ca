#!/usr/bin/env bash
# Soak (issue 23, must-hold 4): a daemon under a steady stream of jobs, killed with `kill -9` at
# random intervals and restarted, for SOAK_SECONDS (600). nginx on 127.0.0.1 serves many 16 KiB
# files, some of 1–50 MiB and some slow ones (limit_rate); a dropper keeps writing job files into the
# inbox the safe way (a dot-file renamed into place): unique names, same-named jobs (on_conflict:
# rename), jobs with checksum=, wrong checksums and 404s (they must fail), Internet Shortcuts, jobs
# in a routing folder; a controller runs `hold`, `release` and `cancel` on claimed jobs. Once or twice
# the agent is stopped with SIGTERM instead (it must exit 0 within 30 s). Then dropping stops, the
# agent drains the inbox and work/ (SOAK_DRAIN, 300 s, deadline), stops, a last `run --once` runs,
# and every job is checked: it is in exactly one place (done/, failed/, or hold/ if it was left held,
# nothing in inbox or work), in the folder and state its kind and the control commands that succeeded
# on it call for; a done job's file is the served file (sha256), named as on_conflict says, owned by
# no other done job, without `.part`, record or owner mark; every `.part` left belongs to a held or
# failed job; no dot-file or temp file is left in the spool.
# Prints `SOAK jobs=… done=… failed=… cancelled=… held=… kills=… problems=N`, each problem above it,
# and exits 1 when there is any.
# Environment: SOAK_SECONDS (600), SOAK_SEED (random; printed, it fixes the job mix and the kill
# times, not the interleaving), SOAK_RATE (jobs a second, 5), SOAK_DRAIN (300), SOAK_KEEP (1: keep
# the work folder; it is kept anyway when there is a problem), BENCH_DISK (/var/tmp).
# Usage: bench/soak.sh [BINARY]
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(realpath -m -- "${1:-$ROOT/.build/release/dropfetch}")
SECS=${SOAK_SECONDS:-600}
SEED=${SOAK_SEED:-$(( $(date +%s) % 100000 ))}
RATE=${SOAK_RATE:-5}
DRAIN=${SOAK_DRAIN:-300}
DISK=${BENCH_DISK:-/var/tmp}
[[ -x $BIN ]] || { echo "soak: no binary at $BIN (swift build -c release)" >&2; exit 2; }
W=$(mktemp -d "$DISK/dropfetch-soak.XXXXXX")
AGENT_PID= DROPPER_PID= CONTROL_PID=
problems=0
cleanup() {
    local p
    for p in $DROPPER_PID $CONTROL_PID $AGENT_PID; do kill -9 "$p" 2>/dev/null || true; done
    [[ -f $W/nginx.pid ]] && kill "$(cat "$W/nginx.pid")" 2>/dev/null
    if [[ ${SOAK_KEEP:-0} == 1 || $problems != 0 ]]; then echo "soak: work folder kept: $W" >&2; else rm -rf "$W"; fi
}
trap cleanup EXIT
echo "soak: seed=$SEED seconds=$SECS rate=$RATE work=$W binary=$BIN" >&2
RANDOM=$SEED

# Served files: 200 × 16 KiB, 8 of 1–50 MiB, 6 slow ones of 1–4 MiB at 256 KiB/s.
mkdir -p "$W/www/small" "$W/www/big" "$W/www/slow" "$W/spool/inbox/urgent" "$W/out" "$W/state"
for (( i = 0; i < 200; i++ )); do head -c 16384 /dev/urandom > "$W/www/small/f$i.bin"; done
for (( i = 0; i < 8; i++ )); do head -c $(( (1 + RANDOM % 50) * 1048576 )) /dev/urandom > "$W/www/big/b$i.bin"; done
for (( i = 0; i < 6; i++ )); do head -c $(( (1 + RANDOM % 4) * 1048576 )) /dev/urandom > "$W/www/slow/s$i.bin"; done
(cd "$W/www" && sha256sum */*.bin) > "$W/served.sha256"
declare -A SUM
while read -r h p; do SUM[$p]=$h; done < "$W/served.sha256"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$W/nginx.conf" <<NGINX
worker_processes 1; pid $W/nginx.pid; error_log $W/nginx-error.log; events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000; client_body_temp_path $W; proxy_temp_path $W;
  fastcgi_temp_path $W; uwsgi_temp_path $W; scgi_temp_path $W;
  server { listen 127.0.0.1:$port; root $W/www; location /slow/ { limit_rate 256k; } } }
NGINX
PATH="$PATH:/usr/sbin:/sbin" nginx -c "$W/nginx.conf" -p "$W"
# Two host names for one server, so per_host has two hosts to share out.
hosts=("127.0.0.1:$port" "localhost:$port")
curl -sf -o /dev/null "http://${hosts[1]}/small/f0.bin" || hosts=("127.0.0.1:$port")

export XDG_STATE_HOME=$W/state   # the record key stays in the work folder
unset STATE_DIRECTORY DROPFETCH_CONFIG NOTIFY_SOCKET JOURNAL_STREAM
CFG=$W/config.yaml
cat > "$CFG" <<YAML
spool: $W/spool
destination: $W/out
agent_id: soak
fsync: true
concurrency: { total: 8, per_host: 5 }
on_conflict: rename
once_wait: 30s
retry: { attempts: 2, initial_delay: 1s, max_delay: 3s }
classes:
  - name: urgent
    match: { folder: urgent }
    priority: 100
  - name: slow
    match: { url: "*/slow/*" }
    max_active: 3
log_level: info
YAML
"$BIN" check --config "$CFG" >&2

# The dropper: one job every 1/RATE s on average; manifest.tsv says what each job is and how it
# must end: id, name, folder, kind, served path, expected output base (- for the URL's name), expect.
dropper() {
    RANDOM=$(( SEED + 1 ))
    local id=0 r kind path name folder out expect host body sleep_ms
    while [[ ! -e $W/stop ]]; do
        id=$(( id + 1 )); r=$(( RANDOM % 100 )); host=${hosts[RANDOM % ${#hosts[@]}]}
        folder=. out=- expect=done path=small/f$(( RANDOM % 200 )).bin name=J$id.url
        case $r in
            [0-9]|1[0-1]) kind=same; name=same-$(( RANDOM % 4 )).url; out=${name%.url}.bin
                          (( RANDOM % 4 == 0 )) && path=big/b$(( RANDOM % 8 )).bin ;;
            1[2-9]) kind=checksum; (( RANDOM % 3 == 0 )) && path=big/b$(( RANDOM % 8 )).bin ;;
            2[0-1]) kind=badsum; expect=failed:checksum_mismatch ;;
            2[2-3]) kind=missing; path=small/nope$id.bin; expect=failed:http_status ;;
            2[4-8]) kind=big; path=big/b$(( RANDOM % 8 )).bin ;;
            29|3[0-3]) kind=slow; path=slow/s$(( RANDOM % 6 )).bin ;;
            3[4-9]|4[0-3]) kind=urgent; folder=urgent ;;
            4[4-7]) kind=shortcut ;;
            *) kind=plain ;;
        esac
        # A same-named job is dropped only while no job of that name waits in the inbox: the
        # dropper is the inbox's only writer of those names, and mv would replace the waiting one.
        if [[ $kind == same && -e $W/spool/inbox/$name ]]; then id=$(( id - 1 )); sleep 0.05; continue; fi
        if [[ $kind == shortcut ]]; then
            body=$(printf '[InternetShortcut]\r\nURL=http://%s/%s\r\nSoakId=%d\r\n' "$host" "$path" "$id")
        else
            body=$(printf '# soak-id=%d\nhttp://%s/%s' "$id" "$host" "$path")
            [[ $out != - ]] && body+=$(printf '\n  out=%s' "$out")
            case $kind in
                checksum) body+=$(printf '\n  checksum=sha-256=%s' "${SUM[$path]}") ;;
                badsum) body+=$(printf '\n  checksum=sha-256=%064d' 0) ;;
            esac
        fi
        printf '%s\n' "$body" > "$W/spool/inbox/$folder/.soak-$id.tmp"
        printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$name" "$folder" "$kind" "$path" "$out" "$expect" >> "$W/manifest.tsv"
        mv -T "$W/spool/inbox/$folder/.soak-$id.tmp" "$W/spool/inbox/$folder/$name"
        sleep_ms=$(( (RANDOM % (2000 / RATE)) + 1 ))
        sleep "$(( sleep_ms / 1000 )).$(printf %03d $(( sleep_ms % 1000 )))"
    done
}

# The controller: every 0.5–2.5 s one command on a claimed job with a unique name (J*.url): hold
# (released 1–6 s later, or cancelled, or left held), or cancel. control.log: time, command, name, rc.
control() {
    RANDOM=$(( SEED + 2 ))
    local -A due=()
    local jobs=() name rc outp now r ms
    while [[ ! -e $W/stop ]]; do
        ms=$(( 500 + RANDOM % 2000 )); sleep "$(( ms / 1000 )).$(printf %03d $(( ms % 1000 )))"
        now=$(date +%s)
        for name in "${!due[@]}"; do
            (( due[$name] <= now )) || continue
            unset "due[$name]"; r=$(( RANDOM % 100 ))
            if (( r < 70 )); then cmd=release; elif (( r < 85 )); then cmd=cancel; else echo "$now keep $name 0" >> "$W/control.log"; continue; fi
            rc=0; outp=$("$BIN" "$cmd" --config "$CFG" "$name" 2>&1) || rc=$?
            echo "$now $cmd $name $rc ${outp//$'\n'/ | }" >> "$W/control.log"
        done
        mapfile -t jobs < <(find "$W/spool/work" -name 'J*.url' -printf '%f\n' 2>/dev/null)
        (( ${#jobs[@]} )) || continue
        name=${jobs[RANDOM % ${#jobs[@]}]}
        if (( RANDOM % 100 < 65 )); then cmd=hold; else cmd=cancel; fi
        rc=0; outp=$("$BIN" "$cmd" --config "$CFG" "$name" 2>&1) || rc=$?
        echo "$now $cmd $name $rc ${outp//$'\n'/ | }" >> "$W/control.log"
        [[ $cmd == hold && $rc == 0 ]] && due[$name]=$(( now + 1 + RANDOM % 6 ))
    done
}

problem() { problems=$(( problems + 1 )); echo "PROBLEM $*"; }
runs=0
start_agent() {
    runs=$(( runs + 1 ))
    echo "=== soak: run $runs starts at $(date +%s.%N)" >> "$W/agent.log"
    "$BIN" run --config "$CFG" >> "$W/agent.log" 2>&1 &
    AGENT_PID=$!
}
# Whether the agent is still the one we started (not gone on its own).
agent_alive() {
    if ! kill -0 "$AGENT_PID" 2>/dev/null; then
        local rc=0; wait "$AGENT_PID" || rc=$?
        problem "agent run $runs exited by itself with status $rc (see $W/agent.log)"
        return 1
    fi
}
stop_agent() {   # SIGTERM: it must exit 0 within 30 s
    local rc=0 t
    kill -TERM "$AGENT_PID"
    for (( t = 0; t < 300; t++ )); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$AGENT_PID" 2>/dev/null; then
        problem "agent run $runs did not stop within 30 s of SIGTERM; killed"
        kill -9 "$AGENT_PID"
    fi
    wait "$AGENT_PID" || rc=$?
    echo "=== soak: run $runs stopped by SIGTERM, status $rc" >> "$W/agent.log"
    [[ $rc == 0 ]] || problem "agent run $runs exited $rc after SIGTERM"
}

: > "$W/manifest.tsv"; : > "$W/control.log"
start_agent
dropper & DROPPER_PID=$!
control & CONTROL_PID=$!
t0=$(date +%s); kills=0; terms=0
term1=$(( SECS / 3 )); term2=$(( 2 * SECS / 3 ))
while (( $(date +%s) - t0 < SECS )); do
    ms=$(( 200 + RANDOM % 4801 )); sleep "$(( ms / 1000 )).$(printf %03d $(( ms % 1000 )))"
    el=$(( $(date +%s) - t0 ))
    if agent_alive; then
        if (( (terms == 0 && el >= term1) || (terms == 1 && el >= term2) )); then
            stop_agent; terms=$(( terms + 1 ))
        else
            kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
            echo "=== soak: run $runs killed (-9) at $(date +%s.%N)" >> "$W/agent.log"
            kills=$(( kills + 1 ))
        fi
    fi
    start_agent
done
touch "$W/stop"
wait "$DROPPER_PID" "$CONTROL_PID" || true
DROPPER_PID= CONTROL_PID=
dropped=$(wc -l < "$W/manifest.tsv")
echo "soak: $dropped jobs dropped, $kills kills, $terms SIGTERMs; draining (at most ${DRAIN}s)" >&2

# Drain: the daemon runs until no job file is left in the inbox or a work folder.
left() { find "$W/spool/inbox" "$W/spool/work" -iname '*.url' -type f | wc -l; }
agent_alive || start_agent
for (( t = 0; t < DRAIN * 2; t++ )); do
    (( $(left) == 0 )) && break
    sleep 0.5
done
(( $(left) == 0 )) || problem "not drained after ${DRAIN}s: $(find "$W/spool/inbox" "$W/spool/work" -iname '*.url' -type f | tr '\n' ' ')"
agent_alive && stop_agent
AGENT_PID=
once=0; "$BIN" run --once --config "$CFG" >> "$W/agent.log" 2>&1 || once=$?
echo "=== soak: last run --once exited $once" >> "$W/agent.log"
[[ $once == 0 ]] || problem "the last run --once exited $once"

# The checks.
cat > "$W/check.py" <<'PY'
import json, os, re, sys, hashlib, collections
W, kills = sys.argv[1], int(sys.argv[2])
spool, dest = os.path.join(W, "spool"), os.path.join(W, "out")
problems = []
def problem(m): problems.append(m)
served = {}
for line in open(os.path.join(W, "served.sha256")):
    h, p = line.split(); served[p] = h
jobs = {}
for line in open(os.path.join(W, "manifest.tsv")):
    i, name, folder, kind, path, out, expect = line.rstrip("\n").split("\t")
    jobs[int(i)] = dict(name=name, folder=folder, kind=kind, path=path, out=out, expect=expect)
# What the control commands that succeeded leave: the last of hold / release / cancel with exit 0.
last = {}
touched = set()
for line in open(os.path.join(W, "control.log")):
    f = line.split(" ", 4)
    t, cmd, name, rc = f[0], f[1], f[2], f[3]
    if cmd == "keep": continue
    if rc not in ("0", "1"):
        problem(f"`{cmd} {name}` exited {rc}: {f[4].strip() if len(f) > 4 else ''}")
    if rc == "0":
        touched.add(name)
        if last.get(name) == "cancel": problem(f"`{cmd} {name}` succeeded after the job was cancelled")
        last[name] = cmd
byname = {j["name"]: i for i, j in jobs.items() if j["name"].startswith("J")}
for name, cmd in last.items():
    i = byname.get(name)
    if i is None: problem(f"control command on {name}, which was never dropped"); continue
    if cmd == "cancel": jobs[i]["expect"] = "cancelled"
    elif cmd == "hold": jobs[i]["expect"] = "held"
idre = re.compile(rb"(?:soak-id=|SoakId=)(\d+)")
where = collections.defaultdict(list)
for top in ("inbox", "work", "hold", "done", "failed"):
    for d, subdirs, files in os.walk(os.path.join(spool, top)):
        for f in files:
            p = os.path.join(d, f); rel = os.path.relpath(p, spool)
            if f.startswith("."):
                if not (top == "work" and f == ".lock"): problem(f"dot-file left in the spool: {rel}")
                continue
            if f.lower().endswith(".url"):
                m = idre.search(open(p, "rb").read())
                if not m: problem(f"job file without a soak id: {rel}"); continue
                where[int(m.group(1))].append((top, d, f))
            elif f.endswith(".status.json"):
                if top not in ("done", "failed"): problem(f"status file outside done/failed: {rel}")
                elif not os.path.exists(p[:-len(".status.json")] + ".url"): problem(f"status file without its job: {rel}")
            elif f.endswith(".state.json"):
                if top != "hold": problem(f"state file left: {rel}")
            else:
                problem(f"unexpected file in the spool: {rel}")
count = collections.Counter()
done_files = {}
owned_parts = {}   # job inode -> (top, id)
part_names = set()
for i, j in sorted(jobs.items()):
    w = where.get(i, [])
    if not w: problem(f"job {i} ({j['folder']}/{j['name']}, {j['kind']}) lost: in no spool folder"); continue
    if len(w) > 1: problem(f"job {i} ({j['name']}) found {len(w)} times: {[os.path.relpath(os.path.join(d, f), spool) for _, d, f in w]}"); continue
    top, d, f = w[0]
    rel = os.path.relpath(os.path.join(d, f), spool)
    owned_parts[os.stat(os.path.join(d, f)).st_ino] = (top, i, rel)
    exp = j["expect"]
    if top in ("inbox", "work"): problem(f"job {i} left in {rel} after the drain"); continue
    if top == "hold":
        count["held"] += 1
        if exp != "held": problem(f"job {i} is in {rel} but expected {exp}")
        continue
    sp = os.path.join(d, f[: -len(".url")] + ".status.json")
    try: st = json.load(open(sp))
    except Exception as e: problem(f"job {i} ({rel}): no readable status file: {e}"); continue
    state = st.get("state"); kind = (st.get("error") or {}).get("kind")
    count[state] += 1
    if st.get("job") != j["name"]: problem(f"job {i} ({rel}): status job={st.get('job')!r}, dropped as {j['name']!r}")
    if j["kind"] == "urgent" and st.get("class") != "urgent": problem(f"job {i} ({rel}): class {st.get('class')!r}, not urgent")
    if not (f == j["name"] or re.fullmatch(re.escape(j["name"][:-4]) + r"\.\d+\.url", f)):
        problem(f"job {i} filed as {rel}, not {j['name']} or a numbered one")
    if exp == "held": problem(f"job {i} was left held but is {state} in {rel}"); continue
    if exp == "cancelled":
        if top != "failed" or state != "cancelled": problem(f"job {i} was cancelled but is {state} ({kind}) in {rel}")
        continue
    if exp == "done":
        if top != "done" or state != "done":
            problem(f"job {i} ({j['kind']}, {j['path']}) should be done but is {state} in {rel}: {json.dumps(st.get('error'))}")
            continue
    else:
        want = exp.split(":")[1]
        if top != "failed" or state != "failed" or kind != want:
            problem(f"job {i} ({j['kind']}, {j['path']}) should have failed with {want} but is {state} ({kind}) in {rel}")
        continue
    if top != "done": continue
    dl = st.get("downloads") or []
    if len(dl) != 1: problem(f"job {i} ({rel}): {len(dl)} downloads in its status"); continue
    fp = dl[0].get("file") or ""
    base = os.path.basename(fp)
    want = j["out"] if j["out"] != "-" else os.path.basename(j["path"])
    if not (base == want or re.fullmatch(re.escape(want[:-4]) + r"\.\d+\.bin", base)):
        problem(f"job {i} ({rel}): file {fp}, expected {want} or a numbered one")
    if os.path.dirname(fp) != dest: problem(f"job {i} ({rel}): file {fp} is not in {dest}")
    if fp in done_files: problem(f"job {i} ({rel}) and job {done_files[fp]} both name {fp}")
    done_files[fp] = i
    if not os.path.isfile(fp): problem(f"job {i} ({rel}): its file {fp} does not exist"); continue
    h = hashlib.sha256(open(fp, "rb").read()).hexdigest()
    if h != served[j["path"]]: problem(f"job {i} ({rel}): {fp} sha256 {h} is not the served {j['path']}'s {served[j['path']]} (size {os.path.getsize(fp)})")
    if dl[0].get("sha256") != served[j["path"]]: problem(f"job {i} ({rel}): status sha256 {dl[0].get('sha256')} is not the served file's")
    if dl[0].get("bytes") != os.path.getsize(fp): problem(f"job {i} ({rel}): status bytes {dl[0].get('bytes')}, file has {os.path.getsize(fp)}")
    for extra in ("." + base + ".part", "." + base + ".part.json"):
        if os.path.exists(os.path.join(dest, extra)): problem(f"job {i} ({rel}) is done but {extra} is left")
    try:
        os.getxattr(fp, "user.dropfetch.owner"); problem(f"job {i} ({rel}) is done but {fp} still has its owner mark")
    except OSError: pass
# The destination: every final file is a done job's; every .part a held or failed job's.
unreferenced = []
for f in sorted(os.listdir(dest)):
    p = os.path.join(dest, f)
    if f.startswith("."):
        if f.endswith(".part"):
            claim = None
            try:
                v = os.getxattr(p, "user.dropfetch.owner"); claim = int.from_bytes(v[1:9], "little")
            except OSError:
                try: claim = json.loads(open(p + ".json", "rb").read().strip()).get("claim")
                except Exception: pass
            owner = owned_parts.get(claim)
            if owner is None: problem(f"{f} ({os.path.getsize(p)} bytes): its owner (claim {claim}) is no job in the spool")
            elif owner[0] not in ("hold", "failed") or jobs[owner[1]]["expect"] == "cancelled":
                problem(f"{f} left, owned by job {owner[1]} in {owner[2]} ({jobs[owner[1]]['expect']})")
        elif f.endswith(".part.json"):
            if not os.path.exists(p[: -len(".json")]):
                # A job held after it published its file and before it was filed keeps the file's
                # record, so that a release finds the file finished (docs/spool.md).
                claim = None
                try: claim = json.loads(open(p, "rb").read().strip()).get("claim")
                except Exception: pass
                owner = owned_parts.get(claim)
                final = os.path.join(dest, f[1 : -len(".part.json")])
                if not (os.path.exists(final) and owner is not None and owner[0] == "hold"):
                    problem(f"record {f} without its .part")
        elif f.endswith(".bad"): pass
        else: problem(f"hidden file left in the destination: {f}")
    elif p not in done_files:
        # A file published and then held, released or cancelled before its job was filed is left
        # behind (the job fetches again); one whose owner mark names a job no command touched is a
        # published file recovery did not take up.
        try: claim = int.from_bytes(os.getxattr(p, "user.dropfetch.owner")[1:9], "little")
        except OSError: claim = None
        owner = owned_parts.get(claim)
        if owner is not None and jobs[owner[1]]["name"] not in touched:
            problem(f"{f} is named by no done job; its owner mark names job {owner[1]} ({owner[2]}), which no hold, release or cancel touched")
        else:
            unreferenced.append(f + (f" (owner job {owner[1]}, {owner[2]})" if owner else " (no owner mark)" if claim is None else f" (claim {claim})"))
for p in problems: print("PROBLEM", p)
if unreferenced:
    print(f"NOTE {len(unreferenced)} file(s) in the destination named by no done job (a job held after it published its file and before it was filed: released, it fetches again; cancelled, the file stays): {'; '.join(unreferenced[:20])}")
print(f"SOAK jobs={len(jobs)} done={count['done']} failed={count['failed']} cancelled={count['cancelled']} held={count['held']} kills={kills} problems=%d" % len(problems))
PY
out=$(python3 "$W/check.py" "$W" "$kills")
pp=$(grep -c '^PROBLEM' <<< "$out" || true)
problems=$(( problems + pp ))
grep -v '^SOAK' <<< "$out" || true
sed -E "s/problems=[0-9]+$/problems=$problems/" <<< "$(grep '^SOAK' <<< "$out")" | sed "s/^SOAK /SOAK seed=$SEED /"
(( problems == 0 ))

#!/usr/bin/env bash
# A real distributed file system for the Distributed suite (Tests/DropFetchTests/EndToEnd/
# DistributedTests.swift): one GlusterFS volume with one brick on this machine's own non-loopback
# address, mounted twice with the FUSE client. The two mounts stand in for two hosts: flock(2)
# works across them, renameat2(RENAME_NOREPLACE) is EINVAL, inotify does not see the other
# mount's changes, and a replaced file can read stale through the other mount for up to 1 s.
#
#   gluster.sh preflight   can glusterd run here? exit 0, or print why not and exit 1
#   gluster.sh up          start glusterd if it is not running, (re)create the volume, mount it twice
#   gluster.sh down        unmount, delete the volume and its brick, stop glusterd if `up` started it
#   gluster.sh run         up, the Distributed suite (built tests, `swift test --skip-build`), down
#
# Everything lives under DROPFETCH_GLUSTER_DIR (default /var/lib/dropfetch-test-gluster): brick/,
# the mount points a/ and b/, and glusterd.pid when this script started glusterd. `up` and `down`
# are idempotent: `up` first clears what an interrupted run left. Needs root, glusterd and
# mount.glusterfs (`make distributed-deps`), and /dev/fuse.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PATH="$PATH:/usr/sbin:/sbin"

BASE=${DROPFETCH_GLUSTER_DIR:-/var/lib/dropfetch-test-gluster}
VOLUME=${DROPFETCH_GLUSTER_VOLUME:-dropfetch-test}
BRICK=$BASE/brick
MOUNT_A=$BASE/a
MOUNT_B=$BASE/b
PIDFILE=$BASE/glusterd.pid
LOG=.build/test-distributed-output.txt

say() { echo "gluster.sh: $*" >&2; }

# The first global-scope IPv4 address: a brick on 127.0.0.1 is refused by glusterd.
own_address() {
  local address=""
  if command -v ip >/dev/null 2>&1; then
    address=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub(/\/.*/, "", $4); print $4; exit }')
  fi
  if [ -z "$address" ] && command -v hostname >/dev/null 2>&1; then
    address=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -E '^[0-9]+\.' | grep -v '^127\.' | head -n1 || true)
  fi
  printf '%s' "$address"
}

glusterd_answers() { timeout 10 gluster --mode=script pool list >/dev/null 2>&1; }

# Starts glusterd unless one answers already; records the pid of the one it started.
start_glusterd() {
  if glusterd_answers; then return 0; fi
  mkdir -p "$BASE"
  glusterd -p "$PIDFILE" --log-level WARNING || return 1
  for _ in $(seq 1 100); do
    if glusterd_answers; then return 0; fi
    sleep 0.2
  done
  return 1
}

stop_glusterd() {
  [ -f "$PIDFILE" ] || return 0
  local pid
  pid=$(cat "$PIDFILE")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q glusterd "/proc/$pid/comm" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PIDFILE"
}

# Prints why the volume cannot be set up here and returns 1, or returns 0. Past the quick checks it
# sets the volume up and tears it down again: a container may have /dev/fuse and still not be
# allowed to mount, or glusterd may not start.
preflight() {
  local why=""
  if [ "$(id -u)" -ne 0 ]; then
    why="not root (glusterd and mount -t glusterfs need root)"
  elif ! command -v glusterd >/dev/null 2>&1 || ! command -v gluster >/dev/null 2>&1; then
    why="glusterd is not installed (make distributed-deps installs glusterfs-server and glusterfs-client)"
  elif ! command -v mount.glusterfs >/dev/null 2>&1; then
    why="the GlusterFS FUSE client is not installed (glusterfs-client)"
  elif [ ! -c /dev/fuse ]; then
    why="no FUSE device (/dev/fuse): a container started without it cannot mount GlusterFS"
  elif ! (exec 3<>/dev/fuse) 2>/dev/null; then
    why="/dev/fuse cannot be opened (a container without the device allowed)"
  elif [ -z "$(own_address)" ]; then
    why="no non-loopback IPv4 address for the brick"
  else
    local out
    if ! out=$(up 2>&1); then
      why="the volume could not be set up: $(printf '%s\n' "$out" | tail -n1)"
    fi
    down >/dev/null 2>&1 || true
  fi
  if [ -n "$why" ]; then
    echo "$why"
    return 1
  fi
  echo "glusterd runs here: a one-brick volume on $(own_address), mounted twice"
}

unmount_all() {
  for mount in "$MOUNT_A" "$MOUNT_B"; do
    if mountpoint -q "$mount" 2>/dev/null; then
      umount "$mount" 2>/dev/null || umount -l "$mount" || say "cannot unmount $mount"
    fi
  done
}

delete_volume() {
  if glusterd_answers && gluster --mode=script volume info "$VOLUME" >/dev/null 2>&1; then
    gluster --mode=script volume stop "$VOLUME" force >/dev/null 2>&1 || true
    gluster --mode=script volume delete "$VOLUME" >/dev/null || say "cannot delete volume $VOLUME"
  fi
}

down() {
  unmount_all
  delete_volume
  rm -rf "$BRICK"
  rmdir "$MOUNT_A" "$MOUNT_B" 2>/dev/null || true
  stop_glusterd
  rmdir "$BASE" 2>/dev/null || true
}

up() {
  local address
  address=$(own_address)
  [ -n "$address" ] || { say "no non-loopback IPv4 address"; return 1; }
  mkdir -p "$BASE"
  start_glusterd || { say "glusterd does not start (see /var/log/glusterfs/glusterd.log)"; return 1; }
  # What an interrupted run left: mounts, the volume, a brick glusterd would refuse to reuse.
  unmount_all
  delete_volume
  rm -rf "$BRICK"
  mkdir -p "$BRICK" "$MOUNT_A" "$MOUNT_B"
  # `force`: the brick is on the root file system, which glusterd otherwise refuses.
  gluster --mode=script volume create "$VOLUME" "$address:$BRICK" force >/dev/null || { say "cannot create volume $VOLUME"; return 1; }
  gluster --mode=script volume start "$VOLUME" >/dev/null || { say "cannot start volume $VOLUME"; return 1; }
  for mount in "$MOUNT_A" "$MOUNT_B"; do
    local mounted=0
    for _ in $(seq 1 20); do
      if mount -t glusterfs "$address:/$VOLUME" "$mount" 2>/dev/null && mountpoint -q "$mount"; then mounted=1; break; fi
      sleep 0.5
    done
    [ "$mounted" -eq 1 ] || { say "cannot mount $address:/$VOLUME on $mount"; return 1; }
  done
  # One volume seen twice: what one mount writes, the other reads.
  local probe
  probe="probe-$$"
  echo "$probe" > "$MOUNT_A/.$probe" || { say "cannot write to $MOUNT_A"; return 1; }
  [ "$(cat "$MOUNT_B/.$probe" 2>/dev/null)" = "$probe" ] || { say "$MOUNT_A and $MOUNT_B do not show one volume"; return 1; }
  rm -f "$MOUNT_A/.$probe"
  say "volume $VOLUME ($address:$BRICK) mounted on $MOUNT_A and $MOUNT_B"
}

run() {
  trap down EXIT
  up
  mkdir -p .build
  DROPFETCH_TEST_SPOOL_A=$MOUNT_A DROPFETCH_TEST_SPOOL_B=$MOUNT_B \
    "${SWIFT:-swift}" test --skip-build --disable-xctest --enable-swift-testing --filter DistributedTests 2>&1 | tee "$LOG"
  # The suite must have run, not been skipped, and passed.
  if grep -Eq 'Suite "Agents on two mounts[^"]*" (was )?skipped' "$LOG" || ! grep -Eq 'Test run with [0-9]+ tests? .*passed' "$LOG"; then
    say "the Distributed suite did not run or did not pass (see $LOG)"
    return 1
  fi
}

case "${1:-}" in
  preflight) preflight ;;
  up) up ;;
  down) down ;;
  run) run ;;
  *) echo "usage: $0 preflight|up|down|run" >&2; exit 2 ;;
esac

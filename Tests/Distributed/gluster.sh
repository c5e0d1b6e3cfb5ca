#!/usr/bin/env bash
# A real distributed file system for the Distributed suites (Tests/DropFetchTests/EndToEnd/
# DistributedTests.swift, DistributedSplitTests.swift): one GlusterFS volume with one brick on this
# machine's own non-loopback address, mounted three times with the FUSE client. The mounts stand in
# for hosts: flock(2) works across them, renameat2(RENAME_NOREPLACE) is EINVAL, inotify does not
# see another mount's changes, and a replaced file can read stale through another mount for up to
# 1 s. The third mount, c/, has its client's sockets in a network namespace of its own, joined to
# this host by a veth pair: `cut` takes the link down (a network split between that "host" and the
# brick), `heal` brings it up again. With c/ the volume gets `network.ping-timeout 5` and the brick's TCP
# keepalive and user timeout set so that the brick drops a cut-off client, and its locks, about
# 5 s after a cut.
#
#   gluster.sh preflight   can glusterd run here? exit 0 (saying whether the split tests can run: a
#                          network namespace can be made), or print why not and exit 1
#   gluster.sh up          start glusterd if it is not running, (re)create the volume, mount it on a/, b/ and,
#                          when a network namespace can be made, c/ (else it says why and leaves c/ out)
#   gluster.sh cut         cut mount c/'s client off from the brick (idempotent)
#   gluster.sh heal        join it again (idempotent)
#   gluster.sh down        heal, unmount, remove the namespace and veth pair, delete the volume and its brick,
#                          stop glusterd if `up` started it
#   gluster.sh run         the volume on a/ and b/, the Distributed suite; then the timeouts and c/, the split
#                          suite (built tests, `swift test --skip-build`; DROPFETCH_DISTRIBUTED_FILTER and
#                          DROPFETCH_SPLIT_FILTER narrow them); down
#
# Everything lives under DROPFETCH_GLUSTER_DIR (default /var/lib/dropfetch-test-gluster): brick/,
# the mount points a/, b/ and c/, glusterd.pid when this script started glusterd, and
# split-unavailable (why there is no c/) when a namespace could not be made. The namespace is
# DROPFETCH_SPLIT_NETNS (default dropfetch-split), its veth pair DROPFETCH_SPLIT_VETH plus h (this
# host's end) and n (the namespace's), on DROPFETCH_SPLIT_SUBNET.1 and .2/30 (default 10.237.37):
# set all of them (and DROPFETCH_GLUSTER_VOLUME) to run two copies side by side. `up` and `down` are
# idempotent: `up` first clears what an interrupted run left. Needs root, glusterd and
# mount.glusterfs (`make distributed-deps`), /dev/fuse, and for c/ `ip` (iproute2) and nsenter.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PATH="$PATH:/usr/sbin:/sbin"

BASE=${DROPFETCH_GLUSTER_DIR:-/var/lib/dropfetch-test-gluster}
VOLUME=${DROPFETCH_GLUSTER_VOLUME:-dropfetch-test}
BRICK=$BASE/brick
MOUNT_A=$BASE/a
MOUNT_B=$BASE/b
MOUNT_C=$BASE/c
PIDFILE=$BASE/glusterd.pid
SPLIT_UNAVAILABLE=$BASE/split-unavailable
NETNS=${DROPFETCH_SPLIT_NETNS:-dropfetch-split}
VETH=${DROPFETCH_SPLIT_VETH:-dfsplit}
VETH_HOST=${VETH}h
VETH_NS=${VETH}n
SUBNET=${DROPFETCH_SPLIT_SUBNET:-10.237.37}
# How long a client waits for the brick before it fails its calls with ENOTCONN, and how long the
# brick waits for a silent client (TCP keepalive probes every second, TCP_USER_TIMEOUT) before it
# drops it and releases its locks.
PING_TIMEOUT=5
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

# Why a network namespace with a veth pair to this host cannot be made here, or nothing.
split_unavailable_reason() {
  if ! command -v ip >/dev/null 2>&1; then
    echo "no ip command (iproute2): the split tests need a network namespace"
  elif ! command -v nsenter >/dev/null 2>&1; then
    echo "no nsenter (util-linux): the split tests mount c/ from a network namespace"
  else
    local probe="dropfetch-probe-$$" out
    if ! out=$(ip netns add "$probe" 2>&1); then
      echo "a network namespace cannot be made here (ip netns add: $out)"
      return
    fi
    if ! out=$(ip link add "dfprobe$$" type veth peer name "dfprobe$$n" netns "$probe" 2>&1); then
      echo "a veth pair cannot be made here (ip link add type veth: $out)"
    fi
    ip link del "dfprobe$$" >/dev/null 2>&1 || true
    ip netns del "$probe" >/dev/null 2>&1 || true
  fi
}

# The namespace and its link to this host: the namespace's end is SUBNET.2, with its default
# route through this host's end, SUBNET.1, so the brick's address (this host's own) is reached.
netns_create() {
  netns_remove
  ip netns add "$NETNS" &&
    ip link add "$VETH_HOST" type veth peer name "$VETH_NS" netns "$NETNS" &&
    ip addr add "$SUBNET.1/30" dev "$VETH_HOST" &&
    ip link set "$VETH_HOST" up &&
    ip -n "$NETNS" link set lo up &&
    ip -n "$NETNS" addr add "$SUBNET.2/30" dev "$VETH_NS" &&
    ip -n "$NETNS" link set "$VETH_NS" up &&
    ip -n "$NETNS" route add default via "$SUBNET.1"
}

# Deleting this host's end of the pair deletes both ends.
netns_remove() {
  if command -v ip >/dev/null 2>&1; then
    if ip link show "$VETH_HOST" >/dev/null 2>&1; then ip link del "$VETH_HOST" || say "cannot delete $VETH_HOST"; fi
    if [ -e "/run/netns/$NETNS" ]; then ip netns del "$NETNS" || say "cannot delete network namespace $NETNS"; fi
  fi
  return 0
}

# Mounts the volume on c/ with the client started inside the namespace: the mount is in this
# host's mount namespace, the glusterfs process and its sockets in $NETNS.
mount_c() {
  local address=$1
  for _ in $(seq 1 20); do
    if nsenter --net="/run/netns/$NETNS" mount -t glusterfs "$address:/$VOLUME" "$MOUNT_C" 2>/dev/null && mountpoint -q "$MOUNT_C"; then
      break
    fi
    sleep 0.5
  done
  mountpoint -q "$MOUNT_C" || { say "cannot mount $address:/$VOLUME on $MOUNT_C from network namespace $NETNS"; return 1; }
  local client
  client=$(client_of "$MOUNT_C")
  if [ -z "$client" ] || [ "$(readlink "/proc/$client/ns/net")" = "$(readlink /proc/self/ns/net)" ]; then
    say "the client of $MOUNT_C is not in network namespace $NETNS"
    return 1
  fi
}

split_cut() {
  [ -e "/run/netns/$NETNS" ] || { say "no network namespace $NETNS (is the volume up with c/?)"; return 1; }
  ip link set "$VETH_HOST" down
}

split_heal() {
  if ip link show "$VETH_HOST" >/dev/null 2>&1; then ip link set "$VETH_HOST" up; fi
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
  local split
  split=$(split_unavailable_reason)
  if [ -n "$split" ]; then
    echo "glusterd runs here: a one-brick volume on $(own_address), mounted on a/ and b/"
    echo "the split tests will be skipped: $split"
  else
    echo "glusterd runs here: a one-brick volume on $(own_address), mounted on a/, b/ and, from network namespace $NETNS, c/"
  fi
}

# The pid of the FUSE client serving mount point $1, if one runs.
client_of() {
  pgrep -f -- "glusterfs .*--volfile-id=/$VOLUME $1\$" | head -n1 || true
}

# A mount still in use (an agent a test left blocked on it) is detached lazily; its client, which
# would then serve the detached mount on, is ended.
unmount_all() {
  local mount client
  for mount in "$MOUNT_A" "$MOUNT_B" "$MOUNT_C"; do
    if mountpoint -q "$mount" 2>/dev/null; then
      client=$(client_of "$mount")
      umount "$mount" 2>/dev/null || umount -l "$mount" || say "cannot unmount $mount"
      if [ -n "$client" ] && kill -0 "$client" 2>/dev/null; then kill "$client" 2>/dev/null || true; fi
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
  split_heal 2>/dev/null || true
  unmount_all
  netns_remove
  delete_volume
  rm -rf "$BRICK"
  rm -f "$SPLIT_UNAVAILABLE"
  rmdir "$MOUNT_A" "$MOUNT_B" "$MOUNT_C" 2>/dev/null || true
  stop_glusterd
  rmdir "$BASE" 2>/dev/null || true
}

# The volume mounted on a/ and b/, as the Distributed suite (DistributedTests) runs on it.
volume_up() {
  local address
  address=$(own_address)
  [ -n "$address" ] || { say "no non-loopback IPv4 address"; return 1; }
  mkdir -p "$BASE"
  start_glusterd || { say "glusterd does not start (see /var/log/glusterfs/glusterd.log)"; return 1; }
  # What an interrupted run left: a cut link, mounts, the namespace, the volume, a brick glusterd
  # would refuse to reuse.
  split_heal 2>/dev/null || true
  unmount_all
  netns_remove
  delete_volume
  rm -rf "$BRICK"
  rm -f "$SPLIT_UNAVAILABLE"
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

# What the split suite (DistributedSplitTests) adds: the timeouts, and mount c/ from the network
# namespace; or, where no namespace can be made, SPLIT_UNAVAILABLE saying why.
split_up() {
  local split
  split=$(split_unavailable_reason)
  if [ -n "$split" ]; then
    echo "$split" > "$SPLIT_UNAVAILABLE"
    say "no third mount, the split tests will be skipped: $split"
    return 0
  fi
  # Set on the started volume (the brick applies them to the connections it accepts from now on,
  # so before c/ is mounted): a client waits PING_TIMEOUT for the brick; the brick probes an idle
  # client every second and gives up on one that has not answered for PING_TIMEOUT
  # (TCP_USER_TIMEOUT), then releases its locks and open files.
  local option
  for option in "network.ping-timeout $PING_TIMEOUT" "server.keepalive-time 1" "server.keepalive-interval 1" \
                "server.keepalive-count $PING_TIMEOUT" "server.tcp-user-timeout $PING_TIMEOUT"; do
    # shellcheck disable=SC2086
    gluster --mode=script volume set "$VOLUME" $option >/dev/null || { say "cannot set $option on volume $VOLUME"; return 1; }
  done
  mkdir -p "$MOUNT_C"
  netns_create || { say "cannot set up network namespace $NETNS and its veth pair"; return 1; }
  mount_c "$(own_address)" || return 1
  local probe="probe-c-$$"
  echo "$probe" > "$MOUNT_C/.$probe" || { say "cannot write to $MOUNT_C"; return 1; }
  [ "$(cat "$MOUNT_B/.$probe" 2>/dev/null)" = "$probe" ] || { say "$MOUNT_C and $MOUNT_B do not show one volume"; return 1; }
  rm -f "$MOUNT_C/.$probe"
  say "and on $MOUNT_C by a client in network namespace $NETNS ($SUBNET.2, cut off by \`$0 cut\`)"
}

up() {
  volume_up && split_up
}

# Runs the suites that FILTER selects with the environment given before it; the output goes to
# LOG as well. Fails when they did not pass or SKIPPED (a suite's name) was skipped.
run_suites() {
  local filter=$1 skipped=$2 output
  shift 2
  output=$(mktemp)
  env "$@" "${SWIFT:-swift}" test --skip-build --disable-xctest --enable-swift-testing --filter "$filter" 2>&1 | tee "$output"
  cat "$output" >> "$LOG"
  if grep -Eq "Suite \"$skipped[^\"]*\" (was )?skipped" "$output" || ! grep -Eq 'Test run with [0-9]+ tests? .*passed' "$output"; then
    rm -f "$output"
    return 1
  fi
  rm -f "$output"
}

run() {
  trap down EXIT
  mkdir -p .build
  : > "$LOG"
  volume_up
  local failed=0
  # The Distributed suite first, on the volume as it is set up for it (no split timeouts, no c/).
  run_suites "${DROPFETCH_DISTRIBUTED_FILTER:-DistributedTests}" "Agents on two mounts" \
    DROPFETCH_TEST_SPOOL_A="$MOUNT_A" DROPFETCH_TEST_SPOOL_B="$MOUNT_B" || failed=1
  split_up
  if [ -f "$SPLIT_UNAVAILABLE" ]; then
    say "the split tests are skipped: $(cat "$SPLIT_UNAVAILABLE")"
  else
    # The tests call `$0 cut` and `$0 heal`; these name the same namespace.
    run_suites "${DROPFETCH_SPLIT_FILTER:-DistributedSplitTests}" "A network split" \
      DROPFETCH_TEST_SPOOL_A="$MOUNT_A" DROPFETCH_TEST_SPOOL_B="$MOUNT_B" DROPFETCH_TEST_SPOOL_C="$MOUNT_C" \
      DROPFETCH_TEST_SPLIT_CMD="$PWD/Tests/Distributed/gluster.sh" DROPFETCH_GLUSTER_DIR="$BASE" \
      DROPFETCH_GLUSTER_VOLUME="$VOLUME" DROPFETCH_SPLIT_NETNS="$NETNS" DROPFETCH_SPLIT_VETH="$VETH" \
      DROPFETCH_SPLIT_SUBNET="$SUBNET" || failed=1
  fi
  if [ "$failed" -ne 0 ]; then
    say "the Distributed suites did not run or did not pass (see $LOG)"
    return 1
  fi
}

case "${1:-}" in
  preflight) preflight ;;
  up) up ;;
  down) down ;;
  cut) split_cut ;;
  heal) split_heal ;;
  run) run ;;
  *) echo "usage: $0 preflight|up|cut|heal|down|run" >&2; exit 2 ;;
esac

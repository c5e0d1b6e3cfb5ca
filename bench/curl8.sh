#!/usr/bin/env bash
# A curl 8 for the bench to compare against (issue 23: the fastest curl we can get; Debian 12 has
# 7.88), without touching the system's libcurl, which dropfetch links. Downloads the
# <codename>-backports `curl` and `libcurl4` .debs through a private apt state (its own sources
# list, lists and cache; /etc/apt is only read), unpacks them with `dpkg -x` into bench/out/curl8
# (git-ignored) and writes bench/out/curl8/curl, a wrapper that runs that curl on its own libcurl
# (LD_LIBRARY_PATH); its other libraries are the system's. Idempotent: a working wrapper is kept.
# Prints the wrapper's path (or `curl` when the system's is already 8.x); fails, saying why, when it
# cannot get one. Environment: CURL8_SUITE (<codename>-backports), CURL8_MIRROR
# (http://deb.debian.org/debian).
set -euo pipefail
export LC_ALL=C
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/bench/out/curl8
MIRROR=${CURL8_MIRROR:-http://deb.debian.org/debian}
WRAPPER=$DIR/curl

die() { printf 'curl8: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'curl8: %s\n' "$*" >&2; }
is_curl8() { "$@" --version 2>/dev/null | head -n 1 | grep -Eq '^curl (8|9|[1-9][0-9])\.'; }

if is_curl8 curl; then say "the system's curl is already $(curl --version | head -n 1 | cut -d' ' -f1-2)"; echo curl; exit 0; fi
if [[ -x $WRAPPER ]] && is_curl8 "$WRAPPER"; then echo "$WRAPPER"; exit 0; fi

command -v apt-get >/dev/null && command -v dpkg >/dev/null || die "needs apt-get and dpkg (Debian); set CURL=... to a curl 8 instead"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
SUITE=${CURL8_SUITE:-$codename-backports}
[[ $SUITE != -backports ]] || die "no VERSION_CODENAME in /etc/os-release; set CURL8_SUITE"

[[ $DIR != *"'"* ]] || die "the checkout's path must not hold a single quote: $DIR"
rm -rf -- "$DIR"
mkdir -p "$DIR/apt/lists/partial" "$DIR/apt/cache/archives/partial" "$DIR/debs"
echo "deb $MIRROR $SUITE main" > "$DIR/apt/sources.list"
apt=(-q -o "Dir::Etc::sourcelist=$DIR/apt/sources.list" -o Dir::Etc::sourceparts=- -o "Dir::State::Lists=$DIR/apt/lists"
     -o "Dir::Cache=$DIR/apt/cache" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
say "fetching curl and libcurl4 from $SUITE ($MIRROR)"
apt-get "${apt[@]}" update >"$DIR/apt.log" 2>&1 || { cat "$DIR/apt.log" >&2; die "apt-get update of $SUITE failed"; }
(cd "$DIR/debs" && apt-get "${apt[@]}" download "curl/$SUITE" "libcurl4/$SUITE") >>"$DIR/apt.log" 2>&1 ||
    { tail -n 5 "$DIR/apt.log" >&2; die "no curl/libcurl4 in $SUITE"; }
for deb in "$DIR"/debs/*.deb; do dpkg -x "$deb" "$DIR/root"; done
lib=$(find "$DIR/root" -name 'libcurl.so.4' | head -n 1)
[[ -n $lib && -x $DIR/root/usr/bin/curl ]] || die "the .debs hold no usr/bin/curl or libcurl.so.4"
libdir=${lib%/*}
missing=$(LD_LIBRARY_PATH=$libdir ldd "$DIR/root/usr/bin/curl" "$lib" | grep 'not found' | sort -u || true)
[[ -z $missing ]] || die "$SUITE's curl needs libraries this system lacks: $missing"
cat > "$WRAPPER.tmp" <<SH
#!/bin/sh
# curl from $SUITE on its own libcurl; written by bench/curl8.sh (which redoes it if this moves).
LD_LIBRARY_PATH='$libdir'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH} exec '$DIR/root/usr/bin/curl' "\$@"
SH
chmod 0755 "$WRAPPER.tmp"
is_curl8 "$WRAPPER.tmp" || die "the unpacked curl is not 8.x: $("$WRAPPER.tmp" --version 2>&1 | head -n 1)"
mv -- "$WRAPPER.tmp" "$WRAPPER"
rm -rf -- "$DIR/apt/cache"
say "$("$WRAPPER" --version | head -n 1 | cut -d' ' -f1-3) in $DIR"
echo "$WRAPPER"

#!/usr/bin/env bash
# make test-deb: checks the Debian package as an admin would, without touching this machine: the
# package is installed with dpkg into a scratch root (dpkg --root, maintainer scripts run with
# DPKG_ROOT as for a chroot bootstrap), so a shared CI or build host keeps no user, spool, config or
# enabled unit. Each check prints one line; the first failure ends the run (exit 1).
#
#   1. lintian reports no error (the warnings are explained in docs/service.md)
#   2. the contents: binary, units, sysusers.d and tmpfiles.d entries, man pages, completions,
#      docs, example config; /etc/dropfetch/config.yaml the only conffile; Depends: from the binary,
#      and apt can satisfy it here (apt-get --simulate)
#   3. dpkg -i: the postinst made the user and the spool (modes), enabled dropfetch.service and
#      not the one-shot units, and started nothing (DPKG_ROOT; where systemd runs it would start)
#   4. right after install, as the user dropfetch in the root (a chroot, the host's libraries bound
#      in): `dropfetch check`, `dropfetch add` and `dropfetch status` with no --config
#   5. an admin's edit of the conffile survives a reinstall (an upgrade to the same files)
#   6. dpkg -r keeps the config; dpkg -P removes it and the state folder (record key), keeps the
#      spool and a download in it
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="$PATH:/usr/sbin:/sbin"
deb=$(readlink -f "${1:?usage: check-deb.sh PACKAGE.deb}")

scratch=$(mktemp -d /tmp/dropfetch-deb.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
root="$scratch/root"
ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || fail "needs root (dpkg --root, chroot): run make test-deb as root"

# 1. lintian.
lintian --fail-on error "$deb" >"$scratch/lintian.log" 2>&1 || { cat "$scratch/lintian.log" >&2; fail "lintian reports errors"; }
ok "lintian: no error ($(grep -c '^W: ' "$scratch/lintian.log" || true) warnings: $(sed -n 's/^W: [^:]*: \([^ ]*\).*/\1/p' "$scratch/lintian.log" | sort -u | tr '\n' ' '))"

# 2. Contents.
name=$(basename "$deb")
[[ $name =~ ^dropfetch_[0-9][^_]*_[a-z0-9]+\.deb$ ]] || fail "$name is not dropfetch_<version>_<arch>.deb"
version=$(dpkg-deb -f "$deb" Version)
[[ $version == "$(cat VERSION)" || $version == "$(cat VERSION)"-* ]] || fail "package version $version, VERSION $(cat VERSION)"
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$scratch/contents"
for file in /usr/bin/dropfetch \
            /usr/lib/systemd/system/{dropfetch.service,dropfetch-once.service,dropfetch-once.timer,dropfetch.path} \
            /usr/lib/sysusers.d/dropfetch.conf /usr/lib/tmpfiles.d/dropfetch.conf \
            /usr/share/man/man1/dropfetch.1.gz /usr/share/man/man1/dropfetch.run.1.gz /usr/share/man/man5/dropfetch.yaml.5.gz \
            /usr/share/bash-completion/completions/dropfetch /usr/share/zsh/site-functions/_dropfetch \
            /usr/share/fish/vendor_completions.d/dropfetch.fish \
            /usr/share/doc/dropfetch/README.md /usr/share/doc/dropfetch/docs/service.md \
            /usr/share/doc/dropfetch/config.example.yaml /usr/share/doc/dropfetch/copyright \
            /usr/share/doc/dropfetch/changelog.Debian.gz /etc/dropfetch/config.yaml; do
  grep -qx -- "$file" "$scratch/contents" || fail "the package has no $file"
done
! grep -q '^/lib/' "$scratch/contents" || fail "the package ships files in /lib (units belong in /usr/lib/systemd/system)"
ok "dpkg -c: $(grep -vc '/$' "$scratch/contents") files ($(dpkg-deb -f "$deb" Installed-Size) KiB): binary, 4 units, sysusers.d, tmpfiles.d, $(grep -c '/man/man[0-9]/.*\.gz$' "$scratch/contents") man pages, 3 completions, docs"
conffiles=$(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
[[ $conffiles == /etc/dropfetch/config.yaml ]] || fail "conffiles: $conffiles"
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libc6 libcurl4 libyaml-0-2 libssl3; do [[ $depends == *"$lib"* ]] || fail "Depends: lacks $lib: $depends"; done
[[ $depends != *swift* ]] || fail "Depends: names the Swift toolchain: $depends"
apt-get install --simulate --no-install-recommends "$deb" >"$scratch/apt.log" 2>&1 \
  || { cat "$scratch/apt.log" >&2; fail "apt-get --simulate install: Depends cannot be satisfied here"; }
ok "Depends: $depends (apt-get --simulate install: satisfiable)"

# 3. Install into a scratch root.
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers" "$root/etc"
: >"$root/var/lib/dpkg/status"
# Its own log too: dpkg --root still logs to the host's /var/log/dpkg.log unless told.
mkdir -p "$root/var/log"
dpkg_root() { dpkg --root="$root" --log="$root/var/log/dpkg.log" --force-script-chrootless --force-depends "$@"; }
dpkg_root -i "$deb" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; fail "dpkg --root -i"; }
[[ $(dpkg-query --root="$root" -W -f='${Status}' dropfetch) == "install ok installed" ]] || fail "dpkg-query: not installed"
line=$(dpkg-query --root="$root" -W -f='${Conffiles}' dropfetch)
[[ $line =~ ^\ /etc/dropfetch/config\.yaml\ [0-9a-f]{32}$ ]] || fail "dpkg-query Conffiles: '$line'"
ok "dpkg -i (root $root): installed; Conffiles:$line"
grep -q '^dropfetch:x:[0-9]*:[0-9]*:.*:/var/spool/dropfetch:/usr/sbin/nologin$' "$root/etc/passwd" \
  || fail "postinst made no user dropfetch: $(cat "$root/etc/passwd")"
uid=$(awk -F: '$1 == "dropfetch" { print $3 }' "$root/etc/passwd")
for folder in "" /inbox /hold /work /done /failed; do
  [[ $(stat -c '%a %u' "$root/var/spool/dropfetch$folder") == "2770 $uid" ]] \
    || fail "/var/spool/dropfetch$folder is $(stat -c '%a %u' "$root/var/spool/dropfetch$folder"), not 2770 $uid"
done
[[ $(stat -c '%a %U' "$root/etc/dropfetch") == "750 root" ]] || fail "/etc/dropfetch is $(stat -c '%a %U' "$root/etc/dropfetch")"
[[ -L $root/etc/systemd/system/multi-user.target.wants/dropfetch.service ]] || fail "dropfetch.service is not enabled"
[[ $(readlink "$root/etc/systemd/system/multi-user.target.wants/dropfetch.service") == /usr/lib/systemd/system/dropfetch.service ]] \
  || fail "the enable link points at $(readlink "$root/etc/systemd/system/multi-user.target.wants/dropfetch.service")"
for unit in dropfetch.path dropfetch-once.timer; do
  ! find "$root/etc/systemd/system" -name "$unit" | grep -q . || fail "$unit is enabled (only dropfetch.service should be)"
done
ok "postinst: user dropfetch (uid $uid), spool 2770 dropfetch, /etc/dropfetch 0750, dropfetch.service enabled (path and timer not)"

# 4. Right after install: the admin's first commands, as the service user, in the root.
for lib in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib32 /usr/lib/ssl /etc/ssl; do
  if [[ -d $lib ]]; then mkdir -p "$root$lib"; fi
done
for link in lib lib64; do
  if [[ -L /$link ]]; then ln -sfn "$(readlink "/$link")" "$root/$link"; fi
done
gid=$(awk -F: '$1 == "dropfetch" { print $3 }' "$root/etc/group")
mkdir -p "$root/dev" "$root/proc" "$root/tmp"
cat >"$scratch/first-commands.sh" <<'EOF'
set -eu
for lib in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib32 /usr/lib/ssl /etc/ssl; do
  if [ -d "$ROOT$lib" ]; then mount --bind "$lib" "$ROOT$lib"; fi
done
mount --bind /dev "$ROOT/dev"
mount -t proc proc "$ROOT/proc"
as_agent() { env -i PATH=/usr/bin:/bin HOME=/var/spool/dropfetch "$(command -v chroot)" --userspec="$AGENT" --groups="${AGENT#*:}" "$ROOT" "$@"; }
as_agent /usr/bin/dropfetch check
as_agent /usr/bin/dropfetch add https://example.org/first.iso
as_agent /usr/bin/dropfetch status
EOF
if unshare -m --propagation private true 2>/dev/null; then
  ROOT="$root" AGENT="$uid:$gid" unshare -m --propagation private sh "$scratch/first-commands.sh" >"$scratch/first.log" 2>&1 \
    || { cat "$scratch/first.log" >&2; fail "dropfetch check / add / status right after install"; }
  grep -q 'first.iso.url' "$scratch/first.log" || { cat "$scratch/first.log" >&2; fail "add printed no job name"; }
  [[ -f $root/var/spool/dropfetch/inbox/first.iso.url ]] || fail "add wrote no job into the inbox"
  ok "as the user dropfetch right after install: dropfetch check, add, status (no --config: /etc/dropfetch/config.yaml)"
else
  ok "no mount namespace here: dropfetch check after install skipped"
fi

# 5. An admin's edit survives a reinstall.
printf '\n# edited by the admin\n' >>"$root/etc/dropfetch/config.yaml"
dpkg_root -i "$deb" >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; fail "dpkg --root -i (again)"; }
grep -q '^# edited by the admin$' "$root/etc/dropfetch/config.yaml" || fail "the reinstall replaced the edited config"
ok "reinstall keeps the admin's edit of /etc/dropfetch/config.yaml"

# 6. Remove, then purge.
mkdir -p "$root/var/lib/dropfetch" "$root/var/spool/dropfetch/downloads"
echo key >"$root/var/lib/dropfetch/record-key"
echo data >"$root/var/spool/dropfetch/downloads/first.iso"
dpkg_root -r dropfetch >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; fail "dpkg --root -r"; }
[[ ! -e $root/usr/bin/dropfetch && -f $root/etc/dropfetch/config.yaml ]] || fail "dpkg -r: the binary stayed or the config went"
ok "dpkg -r: the binary and units are gone, the config stays"
dpkg_root -P dropfetch >"$scratch/dpkg.log" 2>&1 || { cat "$scratch/dpkg.log" >&2; fail "dpkg --root -P"; }
[[ ! -e $root/etc/dropfetch/config.yaml ]] || fail "dpkg -P left /etc/dropfetch/config.yaml"
[[ ! -e $root/var/lib/dropfetch ]] || fail "dpkg -P left /var/lib/dropfetch (the record key)"
[[ ! -e $root/etc/systemd/system/multi-user.target.wants/dropfetch.service ]] || fail "dpkg -P left the enable link"
[[ -f $root/var/spool/dropfetch/inbox/first.iso.url && -f $root/var/spool/dropfetch/downloads/first.iso ]] \
  || fail "dpkg -P removed the spool or a download"
[[ -z $(dpkg-query --root="$root" -W -f='${Status}' dropfetch 2>/dev/null) ]] \
  || [[ $(dpkg-query --root="$root" -W -f='${Status}' dropfetch) == "unknown ok not-installed" ]] || fail "dpkg -P: still known to dpkg"
left=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o -path ./var/log -prune -o -path ./var/spool/dropfetch -prune -o -path ./etc/passwd -prune \
  -o -path ./usr/lib -prune -o -path ./usr/lib64 -prune -o -path ./etc/ssl -prune -o -type f -print | grep -v -e '^./etc/\(group\|shadow\|gshadow\|\.pwd\.lock\|passwd-\|group-\|shadow-\|gshadow-\)$' || true)
[[ -z $left ]] || { echo "$left" >&2; fail "dpkg -P left files outside the spool"; }
ok "dpkg -P: config, record key and enable link gone; the spool, its job and download kept"

#!/usr/bin/env bash
# make test-install: installs dropfetch into a scratch DESTDIR with PREFIX=/usr and checks it as an
# admin would on a fresh host. Each check prints one line; the first failure ends the run (exit 1).
#
#   1. the files: binary, man pages (one per command), completions for bash, zsh and fish, units,
#      tmpfiles.d and sysusers.d entries, docs, /etc/dropfetch/config.yaml
#   2. every man page renders with `groff -man` and `man -l`, with written EXIT STATUS and FILES
#      sections and a config page (dropfetch.yaml.5); every completion script parses
#   3. the binary needs nothing from the Swift toolchain: ldd and RUNPATH; it is under 15 MB (stripped);
#      then it runs with the toolchain's library folder hidden (a private mount namespace; needs root)
#   4. `systemd-analyze verify --root=DESTDIR` accepts every unit; dropfetch-once.service counts 75 as
#      success and waits after it (ExecStopPost=, run here as systemd would); `systemd-analyze security` rates
#      dropfetch.service at most 3.0; the sysusers.d and tmpfiles.d entries apply to a scratch root
#   5. the service tests (sd_notify, check, config lookup, journal) and the daemon and job-control
#      suites, run against the installed binary (DROPFETCH_BIN)
#   6. make uninstall leaves the tree empty
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH="$PATH:/usr/sbin:/sbin"
command -v swift >/dev/null 2>&1 || export PATH="/opt/swift/usr/bin:$PATH"

scratch=$(mktemp -d /tmp/dropfetch-install.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
dest="$scratch/dest"
ok() { printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; exit 1; }

make --no-print-directory install DESTDIR="$dest" PREFIX=/usr >"$scratch/install.log" 2>&1 \
  || { cat "$scratch/install.log" >&2; fail "make install DESTDIR=$dest PREFIX=/usr"; }
ok "make install DESTDIR=… PREFIX=/usr"

# 1. Files.
bin="$dest/usr/bin/dropfetch"
[[ -x $bin ]] || fail "usr/bin/dropfetch missing or not executable"
commands=(run check status add hold release cancel retry)
for page in dropfetch "${commands[@]/#/dropfetch.}"; do
  [[ -s $dest/usr/share/man/man1/$page.1 ]] || fail "usr/share/man/man1/$page.1 missing"
done
[[ -s $dest/usr/share/man/man5/dropfetch.yaml.5 ]] || fail "usr/share/man/man5/dropfetch.yaml.5 missing"
[[ ! -e $dest/usr/share/man/man1/dropfetch.help.1 ]] || fail "usr/share/man/man1/dropfetch.help.1 installed (an empty page)"
ok "man pages: dropfetch.1, ${#commands[@]} command pages and dropfetch.yaml.5; no dropfetch.help.1"
for file in usr/share/bash-completion/completions/dropfetch usr/share/zsh/site-functions/_dropfetch \
            usr/share/fish/vendor_completions.d/dropfetch.fish \
            usr/lib/systemd/system/{dropfetch.service,dropfetch-once.service,dropfetch-once.timer,dropfetch.path} \
            usr/lib/tmpfiles.d/dropfetch.conf usr/lib/sysusers.d/dropfetch.conf \
            usr/share/doc/dropfetch/config.example.yaml usr/share/doc/dropfetch/README.md \
            usr/share/doc/dropfetch/docs/service.md usr/share/doc/dropfetch/docs/config.md \
            etc/dropfetch/config.yaml; do
  [[ -s $dest/$file ]] || fail "$file missing"
done
grep -q '^ExecStart=/usr/bin/dropfetch run ' "$dest/usr/lib/systemd/system/dropfetch.service" \
  || fail "dropfetch.service does not start /usr/bin/dropfetch"
ok "completions (bash, zsh, fish), units, tmpfiles.d, sysusers.d, docs, config"
# The installed config parses (status exits 0, or 3 where /var/spool/dropfetch does not exist; 2 is an error).
"$bin" status --config "$dest/etc/dropfetch/config.yaml" >/dev/null 2>"$scratch/config.err" && code=0 || code=$?
[[ $code == 0 || $code == 3 ]] || { cat "$scratch/config.err" >&2; fail "etc/dropfetch/config.yaml does not load"; }
ok "etc/dropfetch/config.yaml loads"

# 2. Man pages render; completion scripts parse.
for page in "$dest"/usr/share/man/man1/*.1 "$dest"/usr/share/man/man5/*.5; do
  out=$(groff -man -Tutf8 -ww "$page" 2>"$scratch/groff.err") || fail "groff -man $page"
  [[ ! -s $scratch/groff.err ]] || { cat "$scratch/groff.err" >&2; fail "groff warnings for $page"; }
  grep -q 'SYNOPSIS' <<<"$(sed 's/.\x08//g' <<<"$out")" || fail "no SYNOPSIS in $page"
done
ok "groff -man renders every page"
# What an admin reads with man -l (man-db; groff above where it is missing): real EXIT STATUS and
# FILES sections, 75's reasons in dropfetch-run(1), every config key in dropfetch.yaml(5).
render() { if command -v man >/dev/null; then MANWIDTH=100 man -l "$1" 2>/dev/null; else groff -man -Tutf8 "$1"; fi | sed 's/.\x08//g'; }
for page in "$dest"/usr/share/man/man1/*.1; do
  text=$(render "$page")
  section=$(awk '/^EXIT STATUS/ { on = 1; next } /^[A-Z][A-Z ]+$/ { on = 0 } on' <<<"$text")
  [[ -n $section ]] || fail "$(basename "$page"): no EXIT STATUS section"
  ! grep -q 'exits 0 on success, and >0 if an error occurs' <<<"$section" || fail "$(basename "$page"): boilerplate EXIT STATUS"
  grep -Eq '^ +(0|75) ' <<<"$section" || grep -q 'each command' <<<"$section" || fail "$(basename "$page"): EXIT STATUS lists no code"
  grep -q '^FILES' <<<"$text" && grep -q '/etc/dropfetch/config.yaml' <<<"$text" || fail "$(basename "$page"): no FILES section"
done
run_text=$(render "$dest/usr/share/man/man1/dropfetch.run.1")
for reason in 'retry due later' 'schedule window' 'quota' 'free space' 'still being written'; do
  grep -q "$reason" <<<"$(tr -s ' \n' ' ' <<<"$run_text")" || fail "dropfetch.run.1: exit 75 does not mention '$reason'"
done
yaml_text=$(render "$dest/usr/share/man/man5/dropfetch.yaml.5")
for key in spool concurrency.per_host split.connections 'schedule\[\].pause' 'quota\[\].bytes' 'classes\[\].max_active'; do
  grep -Eq "^ +$key\b" <<<"$yaml_text" || fail "dropfetch.yaml.5 does not list $key"
done
ok "man -l: EXIT STATUS (written, not boilerplate) and FILES in every page; 75's reasons in dropfetch.run.1 (schedule, quota); keys in dropfetch.yaml.5"
bash -n "$dest/usr/share/bash-completion/completions/dropfetch" || fail "bash completion does not parse"
if command -v zsh >/dev/null; then zsh -n "$dest/usr/share/zsh/site-functions/_dropfetch" || fail "zsh completion"; fi
if command -v fish >/dev/null; then fish -n "$dest/usr/share/fish/vendor_completions.d/dropfetch.fish" || fail "fish completion"; fi
ok "completion scripts parse (bash$(command -v zsh >/dev/null && echo ', zsh')$(command -v fish >/dev/null && echo ', fish'))"

# 3. Nothing from the toolchain.
toolchain_lib=$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/../lib" && pwd)
libs=$(ldd "$bin")
if grep -q -e "$toolchain_lib" -e 'not found' <<<"$libs"; then echo "$libs" >&2; fail "ldd: needs $toolchain_lib"; fi
if readelf -d "$bin" | grep -qE 'RPATH|RUNPATH'; then fail "the binary has a RUNPATH"; fi
ok "ldd: $(wc -l <<<"$libs") system libraries, none in $toolchain_lib; no RUNPATH"
# The installed (stripped) binary is under 20 MB, 20,000,000 bytes (issues 25 and 34; how, in the Makefile's
# SIZE_FLAGS). A glibc older than 2.36 cannot load packed relocations (DT_RELR), so there the build
# leaves them unpacked and the binary is about 0.9 MB bigger: its size is printed, not held to the limit.
size_limit=20000000
size=$(stat -c %s "$bin")
size_mb=$(awk -v s="$size" 'BEGIN { printf "%.2f MB (%.2f MiB)", s / 1e6, s / 1048576 }')
if readelf -d "$bin" | grep -q '(RELR)'; then
  (( size < size_limit )) || fail "the installed binary is $size bytes, $size_mb: not under $size_limit bytes"
  ok "the installed binary is $size bytes, $size_mb: under $size_limit"
else
  ok "the installed binary is $size bytes, $size_mb; no DT_RELR ($(getconf GNU_LIBC_VERSION)): size limit not applied"
fi
mkdir -p "$scratch/spool/inbox" "$scratch/cwd"
printf 'spool: %s/spool\nagent_id: install-check\n' "$scratch" >"$scratch/config.yaml"
probe="\"\$0\" --version && \"\$0\" check --config $scratch/config.yaml && \"\$0\" run --once --config $scratch/config.yaml"
if [[ $(id -u) -eq 0 ]] && unshare -m --propagation private true 2>/dev/null; then
  (cd "$scratch/cwd" && unshare -m --propagation private sh -c \
    "mount -t tmpfs none '$toolchain_lib' && ! ls '$toolchain_lib'/swift >/dev/null 2>&1 && $probe" "$bin") \
    >"$scratch/hidden.log" 2>&1 || { cat "$scratch/hidden.log" >&2; fail "the binary does not run with $toolchain_lib hidden"; }
  ok "runs with $toolchain_lib hidden (--version, check, run --once)"
else
  (cd "$scratch/cwd" && env -u LD_LIBRARY_PATH sh -c "$probe" "$bin") >"$scratch/hidden.log" 2>&1 \
    || { cat "$scratch/hidden.log" >&2; fail "the installed binary does not run"; }
  ok "runs (not root: the toolchain folder could not be hidden; ldd above stands for it)"
fi

# 4. Units.
# Both the installed units and those of contrib/ (which name the binary bare), one at a time.
# dropfetch-once.service's ExecStopPost= runs /bin/sh, which verify looks for in the root: a copy
# stands there while it runs.
install -D -m 0755 /bin/sh "$dest/bin/sh"
for unit in "$dest"/usr/lib/systemd/system/* contrib/*.service contrib/*.timer contrib/*.path; do
  systemd-analyze verify --root="$dest" "$unit" >"$scratch/verify.log" 2>&1 \
    || { cat "$scratch/verify.log" >&2; fail "systemd-analyze verify --root=DESTDIR $unit"; }
  [[ ! -s $scratch/verify.log ]] || { cat "$scratch/verify.log" >&2; fail "systemd-analyze verify warns about $unit"; }
done
rm -r "$dest/bin"
ok "systemd-analyze verify --root=DESTDIR: $(cd contrib && ls *.service *.timer *.path | tr '\n' ' ')(installed and contrib/)"
# The one-shot and dropfetch.path under a pause window or a quota (issue 36, rough edge 8): exit 75
# is success, and after it the unit holds its stop phase (ExecStopPost=) so that the path unit, whose
# glob stays true, cannot start it again at once until the start limit trips. Its command, as
# systemd would run it ($$ is a literal $): it waits after 75, not after 0 or 1.
once="$dest/usr/lib/systemd/system/dropfetch-once.service"
grep -qx 'SuccessExitStatus=75' "$once" || fail "dropfetch-once.service does not count 75 as success"
post=$(sed -n 's/^ExecStopPost=//p' "$once" | sed 's/\$\$/$/g')
[[ $post == /bin/sh\ -c\ * ]] || fail "dropfetch-once.service has no ExecStopPost= pause: '$post'"
script=$(sed "s/^\/bin\/sh -c '\(.*\)'\$/\1/" <<<"$post")
for status in 0 1; do
  EXIT_STATUS=$status timeout 2 sh -c "$script" || fail "ExecStopPost= after exit $status does not end at once"
done
EXIT_STATUS=75 timeout 2 sh -c "$script" && fail "ExecStopPost= after exit 75 does not wait" || true
grep -q '^PathExistsGlob=' "$dest/usr/lib/systemd/system/dropfetch.path" || fail "dropfetch.path has no PathExistsGlob="
ok "dropfetch-once.service: 75 is success; ExecStopPost= waits after 75 (not after 0 or 1), so dropfetch.path cannot loop"
for service in dropfetch.service dropfetch-once.service; do
  score=$(systemd-analyze security --offline=true --threshold=30 "$dest/usr/lib/systemd/system/$service" 2>&1 \
    | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p') || true
  [[ -n $score ]] || fail "systemd-analyze security gave no score for $service"
  awk -v s="$score" 'BEGIN { exit !(s <= 3.0) }' || fail "systemd-analyze security rates $service $score (> 3.0)"
  ok "systemd-analyze security --offline=true: $service $score"
done
root="$scratch/root"
mkdir -p "$root/etc"
: >"$root/etc/passwd"; : >"$root/etc/group"
systemd-sysusers --root="$root" "$dest/usr/lib/sysusers.d/dropfetch.conf" >/dev/null 2>&1 || fail "systemd-sysusers"
grep -q '^dropfetch:' "$root/etc/passwd" || fail "sysusers.d made no user dropfetch"
systemd-tmpfiles --root="$root" --create "$dest/usr/lib/tmpfiles.d/dropfetch.conf" 2>"$scratch/tmpfiles.log" \
  || { cat "$scratch/tmpfiles.log" >&2; fail "systemd-tmpfiles --create"; }
[[ $(stat -c '%a' "$root/var/spool/dropfetch/inbox") == 2770 ]] || fail "inbox is not 2770"
ok "sysusers.d makes the user dropfetch; tmpfiles.d makes the spool (inbox 2770, setgid)"

# 5. The service behaviours, against the installed binary.
suites='^DropFetchTests\.(ServiceNotifyTests|CheckCommandTests|ConfigLookupTests|DaemonTests|ControlTests)/'
DROPFETCH_BIN="$bin" swift test --skip-build --filter "$suites" >"$scratch/tests.log" 2>&1 \
  || { grep -E '✘|recorded an issue' "$scratch/tests.log" >&2 || tail -40 "$scratch/tests.log" >&2; fail "tests against $bin"; }
grep -Eq 'Test run with [0-9]+ tests? .*passed' "$scratch/tests.log" || fail "no Swift Testing summary"
ok "$(grep -Eo 'Test run with [0-9]+ tests? in [0-9]+ suites? passed' "$scratch/tests.log") against the installed binary"

# 6. Uninstall.
make --no-print-directory uninstall DESTDIR="$dest" PREFIX=/usr >/dev/null
left=$(find "$dest" -type f)
[[ -z $left ]] || { echo "$left" >&2; fail "make uninstall left files"; }
ok "make uninstall removes every file"

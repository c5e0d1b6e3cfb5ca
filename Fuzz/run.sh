#!/usr/bin/env bash
# Builds the libFuzzer targets of Fuzz/ into .build-fuzz/ and runs each for FUZZ_SECONDS (default 600).
#
# Usage: Fuzz/run.sh [jobfile] [config] [headers] [statefile] [ledger]   (no names: all five, one after another)
# Environment:
#   FUZZ_SECONDS=600      run time per target (-max_total_time); 0 builds each and runs it once over its
#                         seed corpus (-runs=0: no mutation, a few seconds)
#   FUZZ_NICE=10          nice level of the fuzzers
#   FUZZ_TIMEOUT=25       seconds one input may take before libFuzzer calls it a hang
#   FUZZ_SWIFTFLAGS="-O"  optimisation flags for swiftc (e.g. "-Onone" for clearer stacks)
#   FUZZ_KEEP_GOING=1     fork mode with -ignore_crashes=1: keep fuzzing after a crash, collecting every one
#   SWIFTC                the compiler (default: swiftc on PATH, else /opt/swift/usr/bin/swiftc)
#
# Each target is one executable built from all of Sources/DropFetch plus Fuzz/<Target>/main.swift, so the
# harness reaches the library's internal types. It fuzzes a copy of Fuzz/corpus/<name> in
# .build-fuzz/corpus-<name> (inputs found earlier are kept there); a crash is written to
# .build-fuzz/run-<name>/crash-<sha1>, libFuzzer's log to .build-fuzz/run-<name>/fuzz-0.log.
# Exits 1 when any target crashed, leaked, hung or ran out of memory.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="$root/.build-fuzz"
seconds=${FUZZ_SECONDS:-600}
nice_level=${FUZZ_NICE:-10}
timeout=${FUZZ_TIMEOUT:-25}
read -r -a opt_flags <<<"${FUZZ_SWIFTFLAGS:--O}"

if [[ -z ${SWIFTC:-} ]]; then
  SWIFTC=$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)
fi
swift_bin=$(dirname "$SWIFTC")

declare -A target_dirs=([jobfile]=JobFile [config]=Config [headers]=ResponseHeaders [statefile]=StateFile [ledger]=Ledger)
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(jobfile config headers statefile ledger)
for name in "${targets[@]}"; do
  [[ -n ${target_dirs[$name]:-} ]] || { echo "run.sh: unknown target '$name' (jobfile, config, headers, statefile, ledger)" >&2; exit 2; }
done

mkdir -p "$out"
cd "$root"

# swift-log's Logging module, built once without instrumentation: the library imports it.
log_src=""
for candidate in "$out/spm/checkouts/swift-log" "$root/.build/checkouts/swift-log"; do
  if [[ -d $candidate/Sources/Logging ]]; then log_src=$candidate/Sources/Logging; break; fi
done
if [[ -z $log_src ]]; then
  echo "== resolving swift-log into $out/spm"
  "$swift_bin/swift" package --package-path "$root" --scratch-path "$out/spm" resolve
  log_src="$out/spm/checkouts/swift-log/Sources/Logging"
fi
if [[ ! -f $out/libLogging.a || -n $(find "$log_src" -name '*.swift' -newer "$out/libLogging.a") ]]; then
  echo "== building Logging from $log_src"
  mkdir -p "$out/modules" "$out/logging-obj"
  (cd "$out/logging-obj" && "$SWIFTC" -parse-as-library -module-name Logging -package-name swift_log -swift-version 6 \
    -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility \
    -enable-upcoming-feature InternalImportsByDefault -enable-upcoming-feature NonisolatedNonsendingByDefault \
    -O -g -emit-module -emit-module-path "$out/modules/Logging.swiftmodule" \
    -emit-library -static -o "$out/libLogging.a" $(find "$log_src" -name '*.swift' | sort))
fi

c_modules=()
for module in CCurl CYaml CCrypto CLinux; do
  c_modules+=(-Xcc "-fmodule-map-file=$root/Sources/$module/module.modulemap" -I "$root/Sources/$module")
done
mapfile -t library_sources < <(find "$root/Sources/DropFetch" -name '*.swift' | sort)

# build NAME: compiles .build-fuzz/fuzz-NAME unless it is newer than every source it is made of.
build() {
  local name=$1 dir=${target_dirs[$1]}
  local binary="$out/fuzz-$name" stamp="$out/fuzz-$name.flags" flags="${opt_flags[*]} $SWIFTC"
  if [[ -x $binary && $(cat "$stamp" 2>/dev/null) == "$flags" && \
        -z $(find "$root/Sources" "$root/Fuzz/$dir" "$out/libLogging.a" -newer "$binary" -print -quit) ]]; then
    echo "== fuzz-$name is up to date"
    return
  fi
  echo "== building fuzz-$name"
  "$SWIFTC" -sanitize=fuzzer,address -parse-as-library -swift-version 6 "${opt_flags[@]}" -g -use-ld=lld \
    -module-name "${dir}Fuzz" -I "$out/modules" "${c_modules[@]}" \
    "${library_sources[@]}" "$root/Fuzz/$dir/main.swift" "$out/libLogging.a" \
    -lcurl -lyaml -lcrypto -o "$binary"
  echo "$flags" >"$stamp"
}

for name in "${targets[@]}"; do build "$name"; done

# Swift's own crash backtracer would hold the crashing process; libFuzzer and ASan print the stack instead.
export SWIFT_BACKTRACE=enable=no
[[ -x $swift_bin/llvm-symbolizer ]] && export ASAN_SYMBOLIZER_PATH="$swift_bin/llvm-symbolizer"
if [[ $seconds -eq 0 ]]; then
  # Each input of the seed corpus once, no mutation: the harness and its invariants still hold on the seeds.
  mode=(-jobs=1 -runs=0)
elif [[ ${FUZZ_KEEP_GOING:-0} == 1 ]]; then
  mode=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
else
  mode=(-jobs=1)
fi

# final_stat NAME LOG: the value of libFuzzer's final `stat::NAME:` line in LOG, or "?".
final_stat() {
  local value
  value=$(grep -E "^stat::$1:" "$2" 2>/dev/null | tail -n 1 | awk '{print $2}')
  echo "${value:-?}"
}

summary=()
failed=0
for name in "${targets[@]}"; do
  work="$out/run-$name" corpus="$out/corpus-$name"
  rm -rf "$work"
  mkdir -p "$work" "$corpus"
  for seed in "$root/Fuzz/corpus/$name/"*; do
    [[ -e $corpus/${seed##*/} ]] || cp "$seed" "$corpus/"
  done
  echo "== fuzzing $name for ${seconds}s (output: $work/)"
  duration=(-max_total_time="$seconds")
  [[ $seconds -gt 0 ]] || duration=()
  status=0
  (cd "$work" && nice -n "$nice_level" "$out/fuzz-$name" "${mode[@]}" ${duration[@]+"${duration[@]}"} -max_len=65536 \
    -rss_limit_mb=2048 -timeout="$timeout" -print_final_stats=1 -artifact_prefix="$work/" "$corpus") \
    >"$work/libfuzzer.out" 2>&1 || status=$?
  if [[ ${mode[0]} == -jobs=1 ]]; then
    log="$work/fuzz-0.log"
    executions=$(final_stat number_of_executed_units "$log")
    rate=$(final_stat average_exec_per_sec "$log")
  else
    # Fork mode prints no final stats: its last "#N: … time: Ts" progress line counts the whole run.
    log="$work/libfuzzer.out"
    read -r executions elapsed < <(grep -E '^#[0-9]+:' "$log" | tail -n 1 |
      sed -E 's/^#([0-9]+):.* time: ([0-9]+)s.*/\1 \2/') || true
    rate=$(( ${elapsed:-0} > 0 ? ${executions:-0} / elapsed : 0 ))
  fi
  artifacts=$(find "$work" -maxdepth 1 \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
    -o -name 'oom-*' \) -print | sort)
  crashed=no
  if [[ -n $artifacts ]] || grep -qE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|^Fatal error' "$log" 2>/dev/null; then
    crashed=yes
    failed=1
    grep -m 1 -A 40 -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|^Fatal error' "$log" || true
  elif [[ $status -ne 0 || ! -f $log ]]; then
    crashed="no (libFuzzer exited $status; see $work/libfuzzer.out)"
    failed=1
  fi
  line=$(printf '%-8s executions %-11s exec/s %-7s crashes %s' "$name" "${executions:-?}" "${rate:-?}" "$crashed")
  for artifact in $artifacts; do line+=$'\n'"         input: $artifact"; done
  echo "$line"
  summary+=("$line")
done

echo "== summary"
printf '%s\n' "${summary[@]}"
exit "$failed"

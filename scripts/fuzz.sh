#!/usr/bin/env bash
# The fuzz targets in fuzz/ (cargo-fuzz, libFuzzer, on the installed nightly toolchain),
# each for FUZZ_SECONDS (default 30), starting from the seeds in fuzz/seeds/<target>
# (payloads from the tests). A target that panics or breaks its assertion — a tampered
# token accepted, work past its bound — fails the run, and libFuzzer writes the input to
# fuzz/artifacts/<target>/ (reproduce: cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…).
# What each target asserts: runtime/src/fuzzing.rs. Installs cargo-fuzz if it is missing.
#
#   scripts/fuzz.sh                     # every target, 30 s each
#   FUZZ_SECONDS=600 scripts/fuzz.sh wire
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${FUZZ_SECONDS:-30}
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(wire arguments handle request_state bearer xstate)
fi

rustup toolchain list | grep -q '^nightly' || { echo "fuzz: needs the nightly toolchain (rustup toolchain install nightly)" >&2; exit 1; }
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked --quiet

cd fuzz
cargo +nightly fuzz build -O
mkdir -p logs
for target in "${TARGETS[@]}"; do
  corpus="corpus/$target"
  mkdir -p "$corpus"
  rm -rf "artifacts/$target"
  echo "fuzz: $target for ${SECONDS_EACH}s"
  status=0
  cargo +nightly fuzz run -O "$target" "$corpus" "seeds/$target" -- \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    >"logs/$target.log" 2>&1 || status=$?
  grep -E '^stat::(number_of_executed_units|new_units_added)' "logs/$target.log" || true
  if [ "$status" != 0 ]; then
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "logs/$target.log" >&2 || tail -20 "logs/$target.log" >&2
    echo "fuzz: $target failed; its input is in fuzz/artifacts/$target/, its log in fuzz/logs/$target.log" >&2
    exit 1
  fi
done
echo "fuzz: every target ran ${SECONDS_EACH}s without a finding"

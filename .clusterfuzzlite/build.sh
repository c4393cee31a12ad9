#!/bin/bash -eu
# Builds the cargo-fuzz targets of fuzz/ (`interp`, `differential`) and copies them to
# $OUT. Runs inside the ClusterFuzzLite/OSS-Fuzz image (which sets $SRC, $OUT and the
# sanitizer flags) and also on a developer machine with cargo-fuzz installed:
#   RUSTC_BOOTSTRAP=1 .clusterfuzzlite/build.sh        (binaries in target/fuzz-out)
#   ASAN_OPTIONS=detect_odr_violation=0 target/fuzz-out/differential -max_total_time=60
# RUSTC_BOOTSTRAP=1 lets a stable toolchain accept the nightly flags cargo-fuzz passes.
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/target/fuzz-out}
export RUSTC_BOOTSTRAP=${RUSTC_BOOTSTRAP:-1}
cd "$root/fuzz"
cargo fuzz build -O
mkdir -p "$out"
for target in interp differential; do
    cp "target/x86_64-unknown-linux-gnu/release/$target" "$out/"
    # Unicorn's C code defines a global twice (`fcomi_ccval`), which AddressSanitizer's
    # one-definition-rule check aborts on at start-up; the duplicate is Unicorn's, not ours.
    printf '[asan]\ndetect_odr_violation=0\n\n[libfuzzer]\nrss_limit_mb=4096\n' >"$out/$target.options"
done
echo "fuzz targets in $out: interp differential"

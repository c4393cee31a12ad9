#!/bin/bash -eu
# Builds the cargo-fuzz targets of fuzz/ (`interp`, `differential`) and copies them to
# $OUT. Runs inside the ClusterFuzzLite/OSS-Fuzz image (which sets $SRC, $OUT and the
# sanitizer flags) and also on a developer machine with cargo-fuzz installed:
#   RUSTC_BOOTSTRAP=1 .clusterfuzzlite/build.sh        (binaries in target/fuzz-out)
# RUSTC_BOOTSTRAP=1 lets a stable toolchain accept the nightly flags cargo-fuzz passes.
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/target/fuzz-out}
export RUSTC_BOOTSTRAP=${RUSTC_BOOTSTRAP:-1}
cd "$root/fuzz"
cargo fuzz build -O
mkdir -p "$out"
for target in interp differential; do
    cp "target/x86_64-unknown-linux-gnu/release/$target" "$out/"
done
echo "fuzz targets in $out: interp differential"

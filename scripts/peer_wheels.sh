#!/usr/bin/env bash
# Peer backends (liger-kernel, quack-kernels + CUTLASS DSL) for a GPU machine without network, in two steps.
#
# Here (with network):   bash scripts/peer_wheels.sh download      -> .peers/a (wheels + first half of the 92 MB
#                                                                      cu13 libs wheel) and .peers/b (second half)
# There, first call:     source scripts/peer_wheels.sh stage       (carry .peers/a: unpacks the wheels, keeps part a)
# There, next call:      source scripts/peer_wheels.sh finish      (carry .peers/b: joins the cu13 wheel, unpacks it)
# Each `source` leaves PYTHONPATH pointing at the unpacked packages (liger works after `stage`, quack after `finish`).
# The halves exist because one call carries at most 64 MiB; make the two calls back to back while the machine is warm.
set -u
PEERS_SITE=${PEERS_SITE:-/tmp/blockscope-peers/site}
PEERS_PARTS=${PEERS_PARTS:-/tmp/blockscope-peers/parts}
CU13=nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
WHEELS="liger-kernel==0.8.5 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1
nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2
torch-c-dlpack-ext==0.1.5 einops==0.8.2"

peers_path() {
  export PYTHONPATH="$PEERS_SITE:$PEERS_SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
}

case "${1:-}" in
  download)
    mkdir -p .peers/a .peers/b
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform any -d .peers/a $WHEELS || return 1 2>/dev/null || exit 1
    (cd .peers/a && split -b 44M "$CU13" cu13.part- && mv cu13.part-ab ../b/ && rm "$CU13")
    grep -qx '/.peers/' .git/info/exclude 2>/dev/null || echo '/.peers/' >> .git/info/exclude
    du -sh .peers/a .peers/b ;;
  stage)
    mkdir -p "$PEERS_SITE" "$PEERS_PARTS"
    cp .peers/a/cu13.part-aa "$PEERS_PARTS/"
    for w in .peers/a/*.whl; do python3 -m zipfile -e "$w" "$PEERS_SITE"; done
    peers_path ;;
  finish)
    if [ ! -f "$PEERS_PARTS/cu13.part-aa" ]; then
      echo "peer_wheels: part a is not on this machine (a fresh machine: run 'stage' first)" >&2
    else
      cat "$PEERS_PARTS/cu13.part-aa" .peers/b/cu13.part-ab > "$PEERS_PARTS/$CU13"
      python3 -m zipfile -e "$PEERS_PARTS/$CU13" "$PEERS_SITE" && rm "$PEERS_PARTS/$CU13"
    fi
    peers_path ;;
  path) peers_path ;;
  *) echo "usage: bash scripts/peer_wheels.sh download | source scripts/peer_wheels.sh stage|finish|path" >&2 ;;
esac

#!/usr/bin/env bash
# Peer backends (liger-kernel, quack-kernels + CUTLASS DSL) for a GPU machine without network, in three steps.
#
# Here (with network):   bash tools/peer_wheels.sh download      -> .peers/a (wheels + the first third of the 92 MB
#                                                                      cu13 libs wheel), .peers/b and .peers/c
# There, first call:     source tools/peer_wheels.sh stage       (carry .peers/a: unpacks the wheels, keeps part a)
# There, next call:      source tools/peer_wheels.sh more        (carry .peers/b: keeps part b)
# There, last call:      source tools/peer_wheels.sh finish      (carry .peers/c: joins the cu13 wheel, checks its
#                                                                   sha256, unpacks it)
# Each `source` leaves PYTHONPATH pointing at the unpacked packages (liger works after `stage`, quack after `finish`)
# and exports PEERS_DIR: a private folder (mktemp -d, mode 700, owned by you) holding site/ and parts/. Its path is
# remembered in ${XDG_CACHE_HOME:-~/.cache}/blockscope/peers-dir, so the later calls find it; a remembered folder
# that is missing, a symlink, not yours or not mode 700 is replaced by a new one (never a fixed /tmp path).
# The parts exist because one call carries at most 64 MiB with the working tree (~16 MB); make the calls back to
# back while the machine is warm.
set -u

peers_dir() {
  local pointer="${XDG_CACHE_HOME:-$HOME/.cache}/blockscope/peers-dir" dir=""
  dir=$(head -n 1 "$pointer" 2>/dev/null || true)
  if [ -z "$dir" ] || [ -L "$dir" ] || [ ! -d "$dir" ] || [ ! -O "$dir" ] || [ "$(stat -c %a "$dir")" != 700 ]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/blockscope-peers.XXXXXXXXXX") || return 1
    chmod 700 "$dir" && mkdir -p "$(dirname "$pointer")" && printf '%s\n' "$dir" > "$pointer"
  fi
  export PEERS_DIR="$dir"
  PEERS_SITE="$PEERS_DIR/site"
  PEERS_PARTS="$PEERS_DIR/parts"
}
CU13=nvidia_cutlass_dsl_libs_cu13-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl
WHEELS="liger-kernel==0.8.5 quack-kernels==0.6.5 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1
nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2
torch-c-dlpack-ext==0.1.5 einops==0.8.2"

peers_path() {
  export PYTHONPATH="$PEERS_SITE:$PEERS_SITE/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
}

case "${1:-}" in
  stage|more|finish|path) peers_dir || { echo "peer_wheels: cannot make a private folder (mktemp -d)" >&2; return 1 2>/dev/null || exit 1; } ;;
esac

case "${1:-}" in
  download)
    mkdir -p .peers/a .peers/b
    # shellcheck disable=SC2086
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform any -d .peers/a $WHEELS || return 1 2>/dev/null || exit 1
    rm -rf .peers/b .peers/c && mkdir -p .peers/b .peers/c
    (cd .peers/a && sha256sum "$CU13" > ../c/cu13.sha256 && split -b 31M "$CU13" cu13.part- \
      && mv cu13.part-ab ../b/ && mv cu13.part-ac ../c/ && rm "$CU13")
    grep -qx '/.peers/' .git/info/exclude 2>/dev/null || echo '/.peers/' >> .git/info/exclude
    du -sh .peers/a .peers/b .peers/c ;;
  stage)
    mkdir -p "$PEERS_SITE" "$PEERS_PARTS"
    cp .peers/a/cu13.part-aa "$PEERS_PARTS/"
    for w in .peers/a/*.whl; do python3 -m zipfile -e "$w" "$PEERS_SITE"; done
    peers_path ;;
  more)
    mkdir -p "$PEERS_PARTS" && cp .peers/b/cu13.part-ab "$PEERS_PARTS/"
    peers_path ;;
  finish)
    if [ ! -f "$PEERS_PARTS/cu13.part-aa" ] || [ ! -f "$PEERS_PARTS/cu13.part-ab" ]; then
      echo "peer_wheels: parts a and b are not on this machine (a fresh machine: run 'stage' and 'more' first)" >&2
    else
      cat "$PEERS_PARTS/cu13.part-aa" "$PEERS_PARTS/cu13.part-ab" .peers/c/cu13.part-ac > "$PEERS_PARTS/$CU13"
      if (cd "$PEERS_PARTS" && sha256sum -c --quiet "$OLDPWD/.peers/c/cu13.sha256"); then
        python3 -m zipfile -e "$PEERS_PARTS/$CU13" "$PEERS_SITE"
      else
        echo "peer_wheels: the joined cu13 wheel does not match its sha256 (parts from another download?)" >&2
      fi
      rm -f "$PEERS_PARTS/$CU13"
    fi
    peers_path ;;
  path) peers_path ;;
  *) echo "usage: bash tools/peer_wheels.sh download | source tools/peer_wheels.sh stage|more|finish|path" >&2 ;;
esac

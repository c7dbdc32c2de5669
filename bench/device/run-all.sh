#!/usr/bin/env bash
# On the GPU machine: the parts of a validation that stage-all.sh staged,
# each with a time limit, their summaries on stdout (a device call brings
# back only a few files; full logs go to $OUT when it is set).
#
#   bash bench/device/run-all.sh DEST PART...
#
# PART: int (every example in both modes, about 2 minutes), acc (the 42
# cuda-samples cases in both modes, about 3 minutes), torch (the torch
# suite, CSAN beside it and the MLP overhead, about 5 minutes), probe (the
# launch-bound overhead table of issue #11, about 4 minutes). The archive is
# unpacked once per machine into /tmp/ss; a newer archive replaces it.
set -u
dest=$(cd "$1" && pwd); shift
root=/tmp/ss
stamp=$(tar -xJOf "$dest/all.tar.xz" ./STAMP 2>/dev/null)
if [[ ! -f $root/STAMP || $(cat "$root/STAMP") != "$stamp" ]]; then
  rm -rf "$root"; mkdir -p "$root"
  tar -C "$root" -xJf "$dest/all.tar.xz"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for part in "$@"; do
  start=$(date +%s)
  echo "################ $part"
  case $part in
    int) timeout 400 bash "$root/int/integration-gpu.sh" "$root/int" 2>&1 |
           grep -E '^== |PASS|FAIL|passed|failed|verdict' | grep -v '^PASS' | tail -60 ;;
    acc) if [[ -d $root/acc ]]; then timeout 500 bash "$root/acc/acceptance-gpu.sh" "$root/acc"
         else echo "acc: not staged (stage-all.sh without SAMPLES_BIN)"; fi ;;
    torch) timeout 540 bash "$root/torch/torch-gpu.sh" "${TORCH_ROUNDS:-3}" 2>&1 | tail -80 ;;
    probe) ROUNDS=${ROUNDS:-7} timeout 500 bash "$root/probe/launch-overhead-gpu.sh" "$root/probe" 2>&1 |
             tail -40 ;;
    *) echo "run-all.sh: unknown part '$part' (int, acc, torch, probe)"; exit 2 ;;
  esac
  echo "################ $part took $(( $(date +%s) - start )) s"
done

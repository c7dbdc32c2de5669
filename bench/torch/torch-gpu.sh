#!/usr/bin/env bash
# On the GPU machine, in the folder stage-torch.sh filled: every torch test
# program (racy and fixed) under streamsan and under CSAN, the verdict table,
# one text report, and the MLP overhead table. About 5 minutes on an H100 (ROUNDS of the MLP bench, default 3).
#   bash torch-gpu.sh [ROUNDS]
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
python=${STREAMSAN_PYTHON:-python3}
rounds=${1:-3}
export STREAMSAN_EXT_DIR=$here/ext
mkdir -p "$STREAMSAN_EXT_DIR" results
"$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
torch.cuda.get_device_name(0), "devices", torch.cuda.device_count())' || exit 1
command -v compute-sanitizer || echo "no compute-sanitizer on PATH"
# The custom extension is compiled once, natively (nvcc + ninja), and reused.
echo "== building the load_inline extension (custom_kernel.py)"
timeout 300 "$python" tests/programs/custom_kernel.py --fixed 2>&1 | tail -3
jobs=()
while read -r program kinds; do
  [[ -z $program || $program == \#* ]] && continue
  jobs+=("$program racy $kinds" "$program fixed none")
done < tests/programs.txt
jobs+=("tour.py fixed none")
echo "== streamsan verdicts (${#jobs[@]} runs)"
printf '%s\n' "${jobs[@]}" | xargs -P 8 -L 1 bash -c '
  out=$(timeout 240 tests/check_torch.sh ./streamsan "tests/programs/$0" "$1" "$2" 2>&1); rc=$?
  name=${0%.py}_$1
  printf "%s\n" "$out" > "results/streamsan_$name.log"
  case $rc in 0) v=PASS;; 77) v=SKIP;; *) v="FAIL($rc)";; esac
  echo "$v $name $(grep -m1 "^verdict:" <<<"$out" | cut -d" " -f4-)"' | sort -k2 | tee results/streamsan.txt
echo "== CSAN verdicts (TORCH_CUDA_SANITIZER=1)"
printf '%s\n' "${jobs[@]}" | xargs -P 8 -L 1 bash -c '
  args=(); [[ $1 == fixed ]] && args=(--fixed)
  out=$(TORCH_CUDA_SANITIZER=1 timeout 240 '"$python"' "tests/programs/$0" "${args[@]}" 2>&1); rc=$?
  name=${0%.py}_$1
  printf "%s\n" "$out" > "results/csan_$name.log"
  if grep -q "CSAN detected a possible data race" <<<"$out"; then v=race
  elif [[ $rc -eq 0 ]]; then v=clean
  elif [[ $rc -eq 77 ]]; then v=skipped
  else v="error(rc=$rc: $(grep -m1 -E "Error|error" <<<"$out" | cut -c1-80))"; fi
  echo "$name $v"' | sort | tee results/csan.txt
echo "== verdict table"
"$python" - <<'PY'
rows = {}
for line in open("results/streamsan.txt"):
    parts = line.split()
    rows.setdefault(parts[1], {})["streamsan"] = parts[0] + " " + " ".join(
        p for p in parts[2:] if p.startswith(("kinds=", "python_frame=")))
for line in open("results/csan.txt"):
    name, verdict = line.split(" ", 1)
    rows.setdefault(name, {})["csan"] = verdict.strip()
print("| program | variant | streamsan | CSAN |")
print("| --- | --- | --- | --- |")
for name in sorted(rows):
    program, variant = name.rsplit("_", 1)
    r = rows[name]
    print("| %s | %s | %s | %s |" % (program, variant, r.get("streamsan", "?"), r.get("csan", "?")))
PY
echo "== one text report (side_stream_no_wait.py, racy)"
./streamsan run -- "$python" tests/programs/side_stream_no_wait.py 2>&1 | head -60
echo "== the same with --cpp-stacks (first 40 lines)"
./streamsan run --cpp-stacks -- "$python" tests/programs/side_stream_no_wait.py 2>&1 | head -40
echo "== MLP overhead ($rounds interleaved rounds)"
bash bench/overhead.sh ./streamsan "$rounds"
echo "== failing logs"
for f in results/streamsan_*.log; do
  grep -q "^PASS\|^SKIP" "$f" || { echo "--- $f"; tail -40 "$f"; }
done

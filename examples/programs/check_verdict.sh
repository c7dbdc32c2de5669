#!/usr/bin/env bash
# Runs one example under `streamsan run` and checks the verdict:
#   check_verdict.sh STREAMSAN PROBE PROGRAM EXPECTED
# EXPECTED is a diagnostic kind ("stream-race", ...) the racy version must be
# reported with, "possible-KIND" for one it must be listed with as a
# possible race (no verdict: exit status 0), or "none" for a fixed version,
# which must get no report.
# Each process of the program writes its own report (a program may fork);
# the verdict is over all of them. Exits 77 (skipped) without a GPU, or when
# the program itself exits 77 (what it needs is unavailable here).
set -u
streamsan=$1 probe=$2 program=$3 expected=$4
"$probe" >/dev/null || exit 77
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
"$streamsan" run --format json --log-path "$logs/report.%p.json" -- "$program"
status=$?
if [[ $status -eq 77 ]]; then echo "SKIP: the program cannot run here"; exit 77; fi
log=$logs/all
cat "$logs"/report.*.json > "$log" 2>/dev/null
summary=$(python3 - "$logs" <<'PY'
import collections, glob, json, sys
reports = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/report.*.json"))]
if not reports:
    sys.exit("no report")
diagnostics = [d for r in reports for d in r["diagnostics"]]
unmodelled = collections.Counter()
for r in reports:
    unmodelled.update(r["summary"]["unmodelled_calls"])
# Possible races (candidates) are listed but are no verdict.
confirmed = [d for d in diagnostics if d.get("certainty", "confirmed") == "confirmed"]
kinds = sorted({d["kind"] for d in confirmed})
# A report lists candidates apart, under "possible_races".
possible = sorted({d["kind"] for d in diagnostics if d not in confirmed} |
                  {d["kind"] for r in reports for d in r.get("possible_races", [])})
print(len(confirmed), ",".join(kinds) or "-", ",".join(possible) or "-",
      ",".join(f"{k}={v}" for k, v in unmodelled.items()) or "-")
PY
) || { echo "FAIL: no readable JSON report (exit status $status)"; cat "$log"; exit 1; }
read -r count kinds possible unmodelled <<<"$summary"
echo "verdict: exit=$status diagnostics=$count kinds=$kinds possible=$possible unmodelled=$unmodelled"
if [[ $expected == none ]]; then
  if [[ $status -ne 0 || $count -ne 0 ]]; then
    echo "FAIL: the fixed version must get no report"; cat "$log"; exit 1
  fi
elif [[ $expected == possible-* ]]; then
  if [[ $status -ne 0 || $count -ne 0 || ",$possible," != *",${expected#possible-},"* ]]; then
    echo "FAIL: expected a possible ${expected#possible-} and exit status 0"; cat "$log"; exit 1
  fi
else
  if [[ $status -ne 66 || ",$kinds," != *",$expected,"* ]]; then
    echo "FAIL: expected $expected and exit status 66"; cat "$log"; exit 1
  fi
fi
echo PASS

#!/usr/bin/env bash
# A runtime program in sanitizer mode with a stand-in ThreadSanitizer
# preloaded (fake/fake_libtsan.c): an unknown interface version, or a runtime
# without fibers, is refused in exactly one line and the program runs as
# usual; a usable one is used silently; STREAMSAN_TSAN=0 leaves it alone.
#   refusal_test.sh PROGRAM LIBTSAN_SO_7 LIBTSAN_SO_2 LIBTSAN_SO_2_WITHOUT_FIBERS
set -u
unset STREAMSAN_TSAN
program=$1 v7=$2 v2=$3 nofibers=$4
failed=0
check() {  # name, expected status, expected line ("" for none), env...
  local name=$1 status=$2 line=$3
  shift 3
  local err
  err=$(env STREAMSAN=1 STREAMSAN_BACKEND=sim "$@" "$program" --fixed 2>&1 >/dev/null)
  local got=$?
  local lines
  lines=$(grep -c '^streamsan: ThreadSanitizer runtime' <<<"$err")
  if [[ $got -ne $status ]]; then
    echo "FAIL $name: exit status $got, expected $status"; echo "$err"; failed=1; return
  fi
  if [[ -z $line ]]; then
    [[ $lines -eq 0 ]] || { echo "FAIL $name: unexpected refusal"; echo "$err"; failed=1; return; }
  else
    [[ $lines -eq 1 ]] || { echo "FAIL $name: $lines refusal lines, expected 1"; echo "$err"; failed=1; return; }
    grep -qF -- "$line" <<<"$err" || { echo "FAIL $name: expected '$line'"; echo "$err"; failed=1; return; }
  fi
  echo "ok $name"
}
check "unknown interface version" 0 \
  "streamsan: ThreadSanitizer runtime libtsan.so.7 (GCC) has interface version 7 (libtsan.so.7); this bridge knows libtsan.so.0 and libtsan.so.2; the ThreadSanitizer bridge stays off (host accesses are seen only through annotations)" \
  LD_PRELOAD="$v7"
check "no fibers" 0 "lacks __tsan_get_current_fiber" LD_PRELOAD="$nofibers"
check "usable runtime" 0 "" LD_PRELOAD="$v2"
check "turned off" 0 "" LD_PRELOAD="$v7" STREAMSAN_TSAN=0
exit $failed

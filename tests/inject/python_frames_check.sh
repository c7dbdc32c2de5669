#!/usr/bin/env bash
# Runs tests/inject/python_frames_test.py under every CPython this machine
# has (python3 on PATH, python3.N on PATH, pyenv's versions): each must
# either match its own tracebacks (3.8 to 3.15) or say that its frames are
# not read. Usage: python_frames_check.sh PROBE_LIBRARY TEST_SCRIPT
set -u
probe=$1 script=$2
# 0 for a version the library reads (inject/stack/python_layout.cpp), else 1.
not_read_expected() {
  case $1 in 3.8 | 3.9 | 3.10 | 3.11 | 3.12 | 3.13 | 3.14 | 3.15) echo 0 ;; *) echo 1 ;; esac
}
declare -A seen=()
checked=0 failed=0
candidates=(python3 python3.10 python3.11 python3.12 python3.13 python3.14 python3.15)
for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3; do candidates+=("$p"); done
for candidate in "${candidates[@]}"; do
  python=$(command -v "$candidate" 2>/dev/null) || continue
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
  [[ -n ${seen[$version]:-} ]] && continue
  seen[$version]=1
  expect_not_read=$(not_read_expected "$version")
  [[ $version == 2.* ]] && continue  # ctypes.PyDLL and the script are Python 3's
  echo "== $python ($version)"
  if EXPECT_NOT_READ=$expect_not_read "$python" "$script" "$probe"; then
    checked=$((checked + 1))
  else
    failed=$((failed + 1))
  fi
done
# Where a seccomp policy refuses process_vm_readv, the first walks read
# through a pipe (Note [The first walks read safely]): the same checks with
# the call refused, where strace can inject the refusal.
python=$(command -v python3 2>/dev/null)
if [[ -n $python ]] && command -v strace >/dev/null 2>&1 &&
   strace -f -qq -e trace=none -e inject=process_vm_readv:error=EPERM true 2>/dev/null; then
  echo "== $python, process_vm_readv refused"
  real=$("$python" -c 'import sys; print(sys.executable)')
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  expect_not_read=$(not_read_expected "$version")
  if EXPECT_NOT_READ=$expect_not_read strace -f -qq -e trace=none \
       -e inject=process_vm_readv:error=EPERM "$real" "$script" "$probe"; then
    checked=$((checked + 1))
  else
    failed=$((failed + 1))
  fi
fi
if ((checked + failed == 0)); then
  echo "SKIP: no python3"
  exit 77
fi
echo "$checked interpreters passed, $failed failed"
((failed == 0))

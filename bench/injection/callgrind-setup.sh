# Sourced by this folder's callgrind scripts (library-instructions.sh,
# launch-lines.sh) once `build` and `script` are set: valgrind is there, a
# scratch folder `work` goes at exit, and the build's fake Compute
# Sanitizer API and driver stand in for the GPU machine's.
command -v valgrind >/dev/null || { echo "$script: valgrind is not installed" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export STREAMSAN_SANITIZER_LIB=$build/tests/inject/libfake_sanitizer_api.so
export LD_LIBRARY_PATH=$build/tests/inject${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

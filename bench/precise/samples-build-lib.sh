# Sourced by extra-samples/build-extra-samples.sh,
# wide-samples/build-wide-samples.sh and
# library-samples/build-library-samples.sh (whose sources are not laid out
# as Samples/DIR: it calls build_in itself): building samples two
# nvcc at a time, each sample's log and status in LOGDIR, and the closing
# list. The caller runs samples_build_setup, then sets BASE (nvcc's common
# arguments) and JOBS.

samples_build_setup() { # samples_build_setup SCRIPT SRC BIN: SRC, BIN, LOGDIR (BIN/../buildlogs), NVCC
    local usage="usage: $1 SRC BIN"
    SRC=$(cd "${2:?$usage}" && pwd)
    mkdir -p "${3:?$usage}"; BIN=$(cd "$3" && pwd)
    LOGDIR=$(cd "$BIN/.." && pwd)/buildlogs
    mkdir -p "$LOGDIR"
    rm -f "$LOGDIR"/*.status
    NVCC=/usr/local/cuda/bin/nvcc
}

build() { # build NAME DIR [nvcc args...]  (sources relative to Samples/DIR); runs in the background
    local name=$1 dir=$SRC/Samples/$2; shift 2
    build_in "$name" "$dir" -I . "$@"
}
build_in() { # build_in NAME ABSOLUTE_DIR [nvcc args...]: nvcc run in DIR, BIN/NAME stripped, its status
    local name=$1 dir=$2; shift 2
    if (cd "$dir" && nice -n 10 $NVCC "${BASE[@]}" "$@" -o "$BIN/$name") >"$LOGDIR/$name.log" 2>&1 \
        && strip "$BIN/$name"; then
        echo ok >"$LOGDIR/$name.status"
    else
        echo FAILED >"$LOGDIR/$name.status"
    fi
}
wait_for_slot() { # until fewer than JOBS builds run
    while (( $(jobs -rp | wc -l) >= JOBS )); do wait -n; done
}
b() { # b NAME DIR [nvcc args...]: build, at most JOBS at a time
    wait_for_slot
    echo "== $1"
    build "$@" &
}
module() { # module SAMPLEDIR KERNEL.cu OUT -fatbin|-ptx: a module the sample loads at run time
    (cd "$SRC/Samples/$1" && nice -n 10 $NVCC -arch=sm_90 "$4" -o "$BIN/$3" "$2") >>"$LOGDIR/modules.log" 2>&1 \
        || { echo "module $3 FAILED"; echo FAILED >"$LOGDIR/module-$3.status"; }
}
data() { # data SAMPLEDIR FILE...: run-time input files next to the binaries
    local d=$SRC/Samples/$1; shift
    for f in "$@"; do cp "$d/$f" "$BIN/"; done
}
built_and_failed() { # after `wait`: what built, and the log tail of what did not
    local OK=() FAIL=() s n log
    for s in "$LOGDIR"/*.status; do
        [[ -e $s ]] || continue
        n=$(basename "$s" .status)
        log=$LOGDIR/$n.log; [[ $n == module-* ]] && log=$LOGDIR/modules.log
        if [[ $(cat "$s") == ok ]]; then OK+=("$n"); else FAIL+=("$n"); echo "-- $n"; tail -5 "$log"; fi
    done
    echo "BUILT (${#OK[@]}): ${OK[*]}"
    echo "FAILED (${#FAIL[@]}): ${FAIL[*]:-}"
}

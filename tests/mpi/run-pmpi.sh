#!/bin/sh
# tests/mpi/run-pmpi.sh -- the MPI tests under libnumacoll-mpi (mpi/,
# docs/mpich.md), the profiling-interface library:
#
#  - under MPICH (mpiexec.mpich), each program at np 2 and 3 (NC_NPS
#    overrides) with the library preloaded and NUMACOLL_COUNTERS=1: the
#    program must pass and rank 0's "numacoll counters" line must show
#    calls that numacoll ran; then the same programs on MPICH alone at
#    np 2 (NC_NPS_ALONE: MPICH's waits spin, so np 3 on 2 CPUs takes
#    minutes);
#  - under Open MPI (mpirun), the programs built for the component's tests
#    (build/tests/mpi) with the Open MPI build of the library preloaded and
#    the component absent, as a second MPI for the same library, at np 2
#    (NC_NPS_OMPI).
#
# Programs left out: those that test the Open MPI component itself (its
# parameters, MPI_T variables, two levels, recovery). Where MPICH 4.0.2
# itself fails a call, the program works around it under MPICH_VERSION
# (tests/mpi/red_ops.h, gathers.c, mpit_f.c; docs/mpich.md lists them).
#
#   NC_BUILD=build tests/mpi/run-pmpi.sh      (what `make check-mpich` runs)
#
# Every run is under `timeout`; prints one line per run and
# "N passed, N failed"; exits non-zero when anything failed.

set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${NC_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
NPS=${NC_NPS:-"2 3"}
NPS_ALONE=${NC_NPS_ALONE:-2}
NPS_OMPI=${NC_NPS_OMPI:-2}
TIMEOUT=${NC_TIMEOUT:-120}
LOG=$(mktemp "${TMPDIR:-/tmp}/numacoll-pmpi.XXXXXX")
trap 'rm -f "$LOG"' EXIT
passed=0
failed=0

PROGS="bcast_types bcast_derived derived_types barrier_order many_comms reduce_ops reduce_types nonblocking gathers rscan threads fortran_reduce"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
report() {  # report <ok 0/1> <label> <seconds>
    if [ "$1" = 0 ]; then
        passed=$((passed + 1))
        printf 'PASS  %-52s %6s s\n' "$2" "$3"
    else
        failed=$((failed + 1))
        printf 'FAIL  %-52s %6s s\n' "$2" "$3"
        tail -n 30 "$LOG" | sed 's/^/    | /'
    fi
}

# served: the calls numacoll ran on rank 0, from its counters line
served() {
    grep '^numacoll counters rank 0:' "$LOG" | tr ' ' '\n' |
        awk -F= '$1 !~ /_declined$/ && NF == 2 { s += $2 } END { print s + 0 }'
}

# run <label> <lib or ""> <launcher...>: the program's PASS line, and with
# the library a counters line showing calls numacoll ran
run() {
    label=$1 lib=$2
    shift 2
    t0=$(now)
    timeout "$TIMEOUT" "$@" >"$LOG" 2>&1
    rc=$?
    [ $rc = 124 ] && echo "timed out after $TIMEOUT s (deadlock?)" >>"$LOG"
    if [ $rc = 0 ] && ! grep -q ': PASS (' "$LOG"; then rc=1; fi
    if [ $rc = 0 ] && [ -n "$lib" ]; then
        n=$(served)
        if [ "$n" -gt 0 ]; then
            label="$label, $n served"
        else
            echo "no numacoll counters line, or no call served" >>"$LOG"
            rc=1
        fi
    fi
    report $rc "$label" "$(elapsed "$t0")"
}

if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
shm_list() { ls /dev/shm 2>/dev/null | grep "^numacoll-$(id -u)-" | sort; }
shm_before=$(shm_list)

MLIB=$BUILD/mpich/libnumacoll-mpi.so
if command -v mpiexec.mpich >/dev/null 2>&1 && [ -f "$MLIB" ]; then
    BIN=$BUILD/mpich/tests
    for np in $NPS; do
        for t in $PROGS; do
            run "mpich+numacoll np=$np $t" "$MLIB" \
                mpiexec.mpich -n "$np" -genv LD_PRELOAD "$MLIB" \
                -genv NUMACOLL_COUNTERS 1 "$BIN/$t"
        done
    done
    for np in $NPS_ALONE; do
        for t in $PROGS; do
            run "mpich alone    np=$np $t" "" mpiexec.mpich -n "$np" "$BIN/$t"
        done
    done
else
    echo "FAIL  no mpiexec.mpich or no $MLIB (apt-get install mpich libmpich-dev; make)"
    failed=$((failed + 1))
fi

OLIB=$BUILD/openmpi/libnumacoll-mpi.so
if command -v mpirun.openmpi >/dev/null 2>&1 && [ -f "$OLIB" ]; then
    # Open MPI's own components only: the numacoll component stays out
    OMPI_MCA_mca_base_component_path=$(ompi_info --path pkglibdir | sed 's/^.*: *//')
    export OMPI_MCA_mca_base_component_path
    for np in $NPS_OMPI; do
        for t in $PROGS; do
            [ -x "$BUILD/tests/mpi/$t" ] || continue
            run "openmpi+numacoll np=$np $t" "$OLIB" \
                mpirun.openmpi --oversubscribe --mca mpi_yield_when_idle 1 \
                -np "$np" -x LD_PRELOAD="$OLIB" -x NUMACOLL_COUNTERS=1 \
                "$BUILD/tests/mpi/$t"
        done
    done
fi

t0=$(now)
after=$(shm_list)
new=$(printf '%s\n' "$after" | grep -vxF -e "$shm_before" -e '' || true)
if [ -z "$new" ]; then : >"$LOG"; report 0 "nothing left in /dev/shm" "$(elapsed "$t0")"
else echo "left in /dev/shm: $new" >"$LOG"; report 1 "nothing left in /dev/shm" "$(elapsed "$t0")"; fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

#!/usr/bin/env bash
# tests/ompi5/run.sh -- the Open MPI component against Open MPI 5.0.
#
# Debian 13 "trixie" ships Open MPI 5.0.7 with its internal headers. This
# script keeps a trixie system for it in a chroot and, inside, builds the
# core library and mca_coll_numacoll.so from this working tree (the core
# too: glibc and hwloc differ from Debian 12's) and runs the same MPI tests
# as `make check-mpi` on the host (tests/mpi/run.sh: every program at np
# 2, 3 and 4, the host adds 8, with numacoll forced and its MPI_T counters
# checked, and without it; budgets, parameters, selection lines, /dev/shm),
# there with tests/mpi/sessions.c too (two rounds of MPI sessions in one process, the
# second with two sessions open at once), which 4.1 cannot build.
#
#   tests/ompi5/run.sh                  build and test; last line
#                                       "ompi5: PASS (N passed, 0 failed, ...)"
#                                       or "ompi5: FAIL ..."; exit 1 on failure
#   tests/ompi5/run.sh --bench [ARGS]   build, then bench/compare-ompi.sh ARGS
#                                       inside (default: -n 2 -r 3 -c
#                                       numacoll,tuned,sm,han); results under
#                                       build-ompi5/compare in this tree
#   tests/ompi5/run.sh --shell CMD...   run CMD in the tree inside (debugging)
#
# The system is made once and cached in NC_OMPI5_ROOT (default
# /var/cache/numacoll-ci/trixie-ompi5): `debootstrap --variant=minbase
# trixie`, then the packages below; delete the folder to start over. Each
# run mounts /proc, /sys, /dev, /dev/pts and a tmpfs of its own on /dev/shm,
# copies the tree to /root/numacoll inside (its build-ompi5 folder is kept,
# so a warm run rebuilds only what changed) and undoes the mounts on exit.
# Debian's libopenmpi-dev 5.0.7 lacks the headers of Open MPI's pthreads
# component, which every internal header includes; they are taken from the
# same version's source package (apt-get source, from Debian's archive).
# Every mpirun runs under `timeout` (NC_TIMEOUT, default 120 s each).
# NC_NPS="2 3 4 8" runs the host's full set of process counts.
# Needs root. Logs: build-ompi5/ in this tree.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=.ci/chroot-lib.sh
. "$TOP/.ci/chroot-lib.sh"

NC_SUITE=trixie
NC_CHROOT_CACHE=${NC_OMPI5_ROOT:-/var/cache/numacoll-ci/trixie-ompi5}
ROOT=$NC_CHROOT_CACHE
# gfortran: mpifort's compiler (tests/mpi/fortran_reduce.f90); libopenmpi-dev
# brings only gfortran-14. A changed list is installed into the cached
# system below (apt-get installs what is missing; nothing is deleted).
PKGS="libopenmpi-dev openmpi-bin libpmix-dev gcc libc6-dev make pkg-config libhwloc-dev libnuma-dev gfortran"
LOGS=$TOP/build-ompi5
TIMEOUT=${NC_TIMEOUT:-120}
# The host's check-mpi runs np 2, 3, 4 and 8; np 8 oversubscribed on two
# cores is half of the time here, and the host covers it: NC_NPS="2 3 4 8"
# for the full set (about 9 minutes on a loaded two-core machine).
NPS=${NC_NPS:-"2 3 4"}
# btl/sm is "sm" in 5.0 (4.1's vader); without a btl list Open MPI also
# tries TCP and the fabrics and warns about each. Given in the environment,
# not as --mca: a run that names its own btl list (the two-level runs'
# self,tcp) then overrides it instead of conflicting with it.
BTL=self,sm

mode=test
case ${1:-} in
    --bench) mode=bench; shift ;;
    --shell) mode=shell; shift ;;
    -h|--help) sed -n '2,/^set -e/{/^set -e/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    "") ;;
    *) echo "usage: $0 [--bench [ARGS] | --shell CMD...]" >&2; exit 2 ;;
esac

start=$(date +%s)
result=FAIL
summary="did not finish"
finish() {
    local rc=$?
    ompi5_umount || rc=1
    if [ "$mode" = test ]; then
        [ "$result" = PASS ] && [ "$rc" = 0 ] || result=FAIL
        echo "ompi5: $result ($summary; $(( $(date +%s) - start )) s; logs in $LOGS)"
    fi
}

# Undo the mounts but keep the cached system (nc_cleanup would delete it).
ompi5_umount() {
    NC_ROOT=$ROOT nc_umount_all
    ! awk -v r="$ROOT" 'index($2, r "/") == 1 || $2 == r { found = 1 } END { exit !found }' /proc/mounts ||
        { nc_log "still mounted under $ROOT"; return 1; }
}

nc_need_root
mkdir -p "$LOGS" "$(dirname "$ROOT")"
# One run at a time per cached system: a second waits for the first.
exec 9>"$ROOT.lock"
flock 9
trap finish EXIT
trap 'exit 130' INT TERM

# The Open MPI 5.0 system: packages, then the headers Debian's package
# lacks. Redone when the package list changes.
stamp="$PKGS"
if [ ! -f "$ROOT/.numacoll-ompi5-ok" ] || [ "$(cat "$ROOT/.numacoll-ompi5-ok")" != "$stamp" ]; then
    nc_base
    NC_ROOT=$ROOT
    nc_mount_all
    cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    echo "deb-src $(nc_mirror) $NC_SUITE main" >"$ROOT/etc/apt/sources.list.d/numacoll-src.list"
    nc_log "installing Open MPI 5.0 and the build tools in $ROOT (once; cached afterwards)"
    # shellcheck disable=SC2086  # one word per package
    nc_in apt-get update -qq >"$LOGS/apt.log" 2>&1 &&
        nc_in apt-get install -y -qq --no-install-recommends $PKGS >>"$LOGS/apt.log" 2>&1 ||
        { tail -n 20 "$LOGS/apt.log" >&2; nc_die "apt-get failed (log: $LOGS/apt.log)"; }
    # The headers opal_config.h names for its thread component, from the
    # source package of the very version installed.
    inc=$ROOT/usr/lib/x86_64-linux-gnu/openmpi/include/openmpi
    missing=$(sed -n 's/^#define MCA_threads_[a-z_]*_HEADER "\(..*\)"$/\1/p' "$inc/opal_config.h" |
              while read -r h; do [ -f "$inc/$h" ] || echo "$h"; done)
    if [ -n "$missing" ]; then
        ver=$(chroot "$ROOT" dpkg-query -W -f '${Version}' libopenmpi-dev)
        nc_log "libopenmpi-dev $ver lacks $(echo $missing); taking them from its source package"
        rm -rf "$ROOT/var/cache/numacoll-src"
        mkdir -p "$ROOT/var/cache/numacoll-src"
        nc_in sh -c "cd /var/cache/numacoll-src && apt-get source -qq --download-only openmpi=$ver" \
            >>"$LOGS/apt.log" 2>&1 || nc_die "apt-get source openmpi=$ver failed (log: $LOGS/apt.log)"
        tarball=$(ls "$ROOT"/var/cache/numacoll-src/openmpi_*.orig.tar.*)
        dirs=$(for h in $missing; do dirname "$h"; done | sort -u)
        for d in $dirs; do
            # every header of the component's folder: they include each other
            tar -xaf "$tarball" -C "$inc" --strip-components=1 --wildcards "*/$d/*.h"
        done
        for h in $missing; do [ -f "$inc/$h" ] || nc_die "$h not in $tarball"; done
        rm -rf "$ROOT/var/cache/numacoll-src"
    fi
    chroot "$ROOT" ompi_info --version 2>/dev/null | head -n 1 >&2 || true
    ompi5_umount
    echo "$stamp" >"$ROOT/.numacoll-ompi5-ok"
fi

NC_ROOT=$ROOT
nc_mount_all
# The tree as it is now; build-ompi5 inside is kept between runs (tar keeps
# the sources' times, so make rebuilds only what changed).
src=$ROOT/root/numacoll
if [ -d "$src" ]; then
    find "$src" -mindepth 1 -maxdepth 1 ! -name build-ompi5 -exec rm -rf {} +
fi
nc_copy_tree "$TOP" "$src"

if [ "$mode" = shell ]; then
    nc_in bash -c 'cd /root/numacoll && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 && "$@"' - "$@"
    exit
fi

nc_log "building the core and the component against $(chroot "$ROOT" ompi_info --version 2>/dev/null | head -n 1)"
t0=$(date +%s)
what="ompi"
[ "$mode" = bench ] && what="ompi build-ompi5/numacoll-bench build-ompi5/numacoll-bench-mpi"
# shellcheck disable=SC2086
if ! nc_in make -C /root/numacoll -j2 --no-print-directory BUILD=build-ompi5 $what \
        >"$LOGS/build.log" 2>&1; then
    tail -n 30 "$LOGS/build.log" >&2
    summary="build failed (log: $LOGS/build.log)"
    exit 1
fi
if grep -q 'skipping' "$LOGS/build.log"; then
    grep 'skipping' "$LOGS/build.log" >&2
    summary="component not built"
    exit 1
fi
nc_log "built in $(( $(date +%s) - t0 )) s"

if [ "$mode" = bench ]; then
    [ $# -gt 0 ] || set -- -n 2 -r 3 -c numacoll,tuned,sm,han
    rm -rf "$src/build-ompi5/compare" "$LOGS/compare"
    rc=0
    nc_in env OMPI_MCA_btl=$BTL bash -c 'cd /root/numacoll && NC_BUILD=build-ompi5 bench/compare-ompi.sh -o build-ompi5/compare "$@"' - "$@" || rc=$?
    # the runs' logs too when one failed
    cp -a "$src/build-ompi5/compare" "$LOGS/compare" 2>/dev/null || true
    exit $rc
fi

# The MPI tests, as on the host, and tests/mpi/sessions.c, which only 5.0
# builds.
mpi_log=$LOGS/mpi.log
set +e
nc_in env NC_BUILD=build-ompi5 NC_TIMEOUT="$TIMEOUT" OMPI_MCA_btl=$BTL \
    NC_NPS="$NPS" bash -c 'cd /root/numacoll && tests/mpi/run.sh' 2>&1 | tee "$mpi_log"
set -e
line=$(tail -n 1 "$mpi_log")
mpi_pass=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1/p')
mpi_fail=$(echo "$line" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\2/p')
[ -n "$mpi_pass" ] || { mpi_pass=0; mpi_fail=1; }

ses=$(grep -c '^PASS .* sessions ' "$mpi_log" || true)
summary="$mpi_pass passed, $mpi_fail failed, $ses of them sessions runs; $(chroot "$ROOT" ompi_info --version 2>/dev/null | head -n 1)"
[ "$mpi_fail" = 0 ] && [ "$ses" -gt 0 ] && result=PASS
[ "$result" = PASS ]

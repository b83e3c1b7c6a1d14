#!/usr/bin/env bash
# comm-cost.sh -- what a new communicator costs, with numacoll and without:
# runs build/comm-cost (bench/comm_cost.c) under Open MPI in both
# configurations, alternating (numacoll, default, default, numacoll, ...:
# a slow drift of the machine hits both alike), then prints the median of
# each figure over the runs and the ratio numacoll / default.
#
#   bench/comm-cost.sh [-n NP] [-r RUNS] [-t SECONDS] [-- comm-cost options]
#
#   numacoll  our component from $NC_BUILD/mca_coll_numacoll.so:
#             OMPI_MCA_mca_base_component_path=<Open MPI's dir>:<build dir>,
#             --mca coll numacoll,tuned,libnbc,basic,self
#   default   Open MPI's own choice without numacoll: --mca coll ^numacoll
# Defaults: np 2, 3 runs each, 300 s per run. comm-cost options: --iters N
# (200), --live N (300), --warmup N (10). NC_BUILD (default build) holds
# the programs. Times are per communicator (slowest rank), memory is the
# growth while the live set is held (docs/bench.md, "Communicator cost").
set -euo pipefail

me=comm-cost.sh
np=2 runs=3 limit=300
args=()
usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    -n) np=${2:?-n needs a value}; shift 2 ;;
    -r) runs=${2:?-r needs a value}; shift 2 ;;
    -t) limit=${2:?-t needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; args=("$@"); break ;;
    *) echo "$me: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
    esac
done
for v in "$np" "$runs" "$limit"; do
    case "$v" in
    ''|*[!0-9]*|0) echo "$me: '$v' is not a positive count" >&2; exit 2 ;;
    esac
done

build=${NC_BUILD:-build}
bin=$build/comm-cost
so=$build/mca_coll_numacoll.so
if ! command -v mpirun >/dev/null 2>&1; then
    echo "$me: mpirun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
    exit 2
fi
for f in "$bin" "$so"; do
    if [ ! -e "$f" ]; then
        echo "$me: $f not found; build it with 'make' and 'make ompi'" >&2
        exit 2
    fi
done

# Open MPI refuses root without these; we only ever run on this machine.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$np" -gt "$cpus" ]; then
    place=(--oversubscribe --bind-to none --mca mpi_yield_when_idle 1)
else
    place=(--bind-to core)
fi
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed 's/.*: *//')
abs_build=$(cd "$build" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/comm-cost.XXXXXX")
trap 'rm -rf "$out"' EXIT

run_one() {   # config run
    local env_add=() mca=()
    case "$1" in
    numacoll) env_add=("OMPI_MCA_mca_base_component_path=$ompi_dir:$abs_build")
              mca=(--mca coll numacoll,tuned,libnbc,basic,self) ;;
    default)  mca=(--mca coll ^numacoll) ;;
    esac
    if ! env "${env_add[@]}" timeout "$limit" mpirun -np "$np" "${place[@]}" \
            "${mca[@]}" "$bin" "${args[@]}" >"$out/$1.$2" 2>&1; then
        echo "$me: run $2 of $1 failed:" >&2
        tail -n 20 "$out/$1.$2" >&2
        exit 1
    fi
}

echo "# $me: $(ompi_info --version 2>/dev/null | head -1), np $np, $runs runs each, mpirun ${place[*]}"
echo "#   numacoll: --mca coll numacoll,tuned,libnbc,basic,self (OMPI_MCA_mca_base_component_path=$ompi_dir:$abs_build)"
echo "#   default:  --mca coll ^numacoll"
for ((r = 1; r <= runs; r++)); do
    if [ $((r % 2)) -eq 1 ]; then order="numacoll default"; else order="default numacoll"; fi
    for c in $order; do run_one "$c" "$r"; done
done
grep -h '^# comm-cost' "$out/numacoll.1" || true
grep -h '^# numacoll teams' "$out/numacoll.1" || true
if grep -q '^# numacoll component not loaded' "$out/numacoll.1"; then
    echo "$me: warning: the numacoll configuration did not load the component" >&2
fi

# median of each figure per configuration, then the table
awk -v runs="$runs" '
    function median(s,   n, a, i, j, t) {
        n = split(s, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
            }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    /^#/ { next }
    {
        split(FILENAME, f, "/"); split(f[length(f)], cr, ".")
        key = $1; unit[key] = $3
        if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
        v[cr[1], key] = v[cr[1], key] " " $2
    }
    END {
        printf "%-28s %12s %12s %8s\n", "# median of " runs " runs", "numacoll", "default", "ratio"
        for (i = 1; i <= nk; i++) {
            k = order[i]
            a = median(v["numacoll", k]); b = median(v["default", k])
            r = b + 0 != 0 ? sprintf("%.1fx", a / b) : "-"
            printf "%-28s %9.1f %-3s %8.1f %-3s %6s\n", k, a, unit[k], b, unit[k], r
        }
    }' "$out"/numacoll.* "$out"/default.*

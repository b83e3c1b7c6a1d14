#!/usr/bin/env bash
# compare-mpich.sh -- numacoll against MPICH's own collectives: the MPICH
# build of numacoll-bench-mpi (build/mpich/numacoll-bench-mpi) run under
# mpiexec.mpich in interleaved rounds (A B C, then C B A, ...: each
# configuration as often early as late, so a slow drift of the machine
# cancels), then one table of the medians and their ratios, printed by
# `numacoll-bench --merge` from the runs' CSV files.
#
#   bench/compare-mpich.sh [-n NP] [-r ROUNDS] [-c CONFIGS] [-b BASELINE]
#                          [-o DIR] [-t SECONDS] [-T TABLE]
#                          [-- numacoll-bench-mpi options]
#
# Configurations (-c, comma-separated; default numacoll,mpich,release):
#   numacoll  libnumacoll-mpi preloaded (LD_PRELOAD=$NC_BUILD/mpich/
#             libnumacoll-mpi.so): numacoll serves what it serves
#             (docs/mpich.md) and MPICH the rest
#   mpich     MPICH as installed (its own selection: release_gather once a
#             node communicator has made a few calls)
#   release   MPICH with its shared-memory release_gather collectives
#             forced (MPIR_CVAR_{BCAST,REDUCE,ALLREDUCE,BARRIER}_POSIX_
#             INTRA_ALGORITHM=release_gather)
# -T TABLE runs numacoll with that tuning table (NUMACOLL_TUNING_FILE), e.g.
# one that `numacoll-tune --decline-from DIR/merged.csv --decline-host
# mpich` wrote from an earlier comparison (docs/mpich.md, "Speed").
# Ratios are to BASELINE (default mpich). Options after -- go to every run
# (default: --ops bcast,allreduce,reduce,barrier); numacoll-bench-mpi
# --help lists them (--loop app|b2b|both, --align, --sizes, ...).
# NC_BUILD (default build) holds the programs (make builds them where
# mpicc.mpich exists).
set -euo pipefail

me=compare-mpich.sh
np=2 rounds=3 configs=numacoll,mpich,release baseline=mpich out="" limit=300
table=""
bench_args=()
usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    -n) np=${2:?-n needs a value}; shift 2 ;;
    -r) rounds=${2:?-r needs a value}; shift 2 ;;
    -c) configs=${2:?-c needs a value}; shift 2 ;;
    -b) baseline=${2:?-b needs a value}; shift 2 ;;
    -o) out=${2:?-o needs a value}; shift 2 ;;
    -t) limit=${2:?-t needs a value}; shift 2 ;;
    -T) table=$(cd "$(dirname "${2:?-T needs a file}")" && pwd)/$(basename "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "$me: unknown option '$1' (--help)" >&2; exit 2 ;;
    esac
done
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--ops bcast,allreduce,reduce,barrier)

build=${NC_BUILD:-build}
bin=$build/mpich/numacoll-bench-mpi
lib=$(cd "$build" && pwd)/mpich/libnumacoll-mpi.so
merge=$build/numacoll-bench
for f in "$bin" "$lib" "$merge"; do
    [ -e "$f" ] || { echo "$me: $f not found (apt-get install mpich libmpich-dev; make)" >&2; exit 2; }
done
command -v mpiexec.mpich >/dev/null || { echo "$me: mpiexec.mpich not found" >&2; exit 2; }
IFS=, read -r -a list <<<"$configs"
for c in "${list[@]}"; do
    case "$c" in numacoll|mpich|release) ;; *) echo "$me: unknown configuration '$c'" >&2; exit 2 ;; esac
done
case " ${list[*]} " in *" $baseline "*) ;; *) baseline=${list[0]} ;; esac
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/compare-mpich.XXXXXX")
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.log

config_env() {  # the -genv pairs of one configuration
    case "$1" in
    numacoll) genv=(-genv LD_PRELOAD "$lib" -genv NUMACOLL_COUNTERS 1)
              [ -z "$table" ] || genv+=(-genv NUMACOLL_TUNING_FILE "$table") ;;
    mpich)    genv=() ;;
    release)  genv=()
              for k in BCAST REDUCE ALLREDUCE BARRIER; do
                  genv+=(-genv "MPIR_CVAR_${k}_POSIX_INTRA_ALGORITHM" release_gather)
              done ;;
    esac
}

echo "# $me: MPICH $(mpichversion 2>/dev/null | sed -n 's/^MPICH Version: *//p'), np $np, $rounds rounds, results in $out"
echo "#   run options: ${bench_args[*]}${table:+; numacoll with the table $table}"
start=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
    order=("${list[@]}")
    if [ $((r % 2)) -eq 0 ]; then
        order=()
        for ((i = ${#list[@]} - 1; i >= 0; i--)); do order+=("${list[$i]}"); done
    fi
    for c in "${order[@]}"; do
        config_env "$c"
        log=$out/$c.$r.log
        t0=$(date +%s.%N)
        if ! timeout "$limit" mpiexec.mpich -n "$np" "${genv[@]}" "$bin" \
                --label "$c" --csv "$out/$c.$r.csv" "${bench_args[@]}" >"$log" 2>&1; then
            echo "$me: run $r of $c failed; its output ($log):" >&2
            tail -n 30 "$log" >&2
            exit 1
        fi
        note=$(grep -m1 '^numacoll counters rank 0' "$log" | cut -c1-120 || true)
        printf '#   round %d/%d  %-9s %6.1f s%s\n' "$r" "$rounds" "$c" \
            "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { print b - a }')" \
            "${note:+   $note...}"
    done
done
files=()
for c in "${list[@]}"; do
    for ((r = 1; r <= rounds; r++)); do files+=("$out/$c.$r.csv"); done
done
echo "# $((${#list[@]} * rounds)) runs in $(( $(date +%s) - start )) s"
exec "$merge" --merge --baseline "$baseline" --csv "$out/merged.csv" \
    --json "$out/merged.json" "${files[@]}"

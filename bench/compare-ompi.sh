#!/usr/bin/env bash
# compare-ompi.sh -- numacoll-bench-mpi under Open MPI with several coll
# components, run after run in interleaved rounds (A B C D, then D C B A,
# ...: each configuration is as often early as late in a round, so a slow
# drift of the machine cancels), then one table of the medians and their
# ratios, printed by `numacoll-bench --merge` from the runs' CSV files.
#
#   bench/compare-ompi.sh [-n NP] [-r ROUNDS] [-c CONFIGS] [-b BASELINE]
#                         [-o DIR] [-t SECONDS] [--plot FILE.png] [--overlap]
#                         [--two-level N[:block|rr]] [--dtype LIST]
#                         [-- numacoll-bench-mpi options]
#
# Configurations (-c, comma-separated; default numacoll,tuned,sm,han):
#   numacoll  our component, loaded from $NC_BUILD/mca_coll_numacoll.so:
#             OMPI_MCA_mca_base_component_path=<Open MPI's dir>:<build dir>,
#             --mca coll numacoll,tuned,libnbc,basic,self
#   tuned     Open MPI's default: --mca coll ^numacoll
#   sm        --mca coll ^numacoll --mca coll_sm_priority 100
#   han       --mca coll ^numacoll --mca coll_han_priority 100
#   basic     --mca coll basic,libnbc,self
#   libnbc    --mca coll ^numacoll, as tuned: Open MPI's default, whose
#             nonblocking collectives are libnbc's (the name says which
#             calls are compared)
# Ratios are to BASELINE (default tuned).
# --overlap runs numacoll-bench-mpi --overlap (the nonblocking Ibcast,
# Ireduce, Iallreduce, Ibarrier: blocking, start+wait, start/compute/wait
# and overlap %, OSU's method) instead, default -c numacoll,libnbc -b
# libnbc and options --ops bcast,allreduce, and prints the medians over the
# rounds per configuration, with start+wait's ratio to the baseline. Options after -- go to every run
# (default: --ops bcast), e.g. --align 16 or --align sweep (where the user
# buffers start; default malloc, as applications) and --loop app|b2b|both
# (default both: back-to-back calls, and barrier + one call as OSU and IMB
# time). NC_BUILD (default build) holds the programs.
# --dtype LIST passes --dtype LIST to every run, numacoll's and Open MPI's
# alike (the reductions' element types, e.g. double,double_precision,
# double_int; without options after --, --ops reduce,allreduce).
# --two-level N[:SPLIT] compares numacoll's two-level mode (ompi/
# coll_numacoll_hier.c) with tuned as between nodes: every configuration
# runs with --mca btl self,tcp (TCP on the loopback, also within a
# virtual node: no shared-memory BTL), and numacoll with
# coll_numacoll_virtual_nodes N and coll_numacoll_virtual_split SPLIT
# (default block), so numacoll moves data within each virtual node itself
# and only its N leaders talk over TCP. Defaults then: -n 4, -c
# numacoll,tuned, options --ops bcast,allreduce --sizes 8,1k,64k,1m,4m.
set -euo pipefail

me=compare-ompi.sh
np=2 rounds=3 configs=numacoll,tuned,sm,han baseline=tuned out="" plot=""
limit=300 overlap=0 configs_set=0 baseline_set=0 two_level="" np_set=0
dtype=""
bench_args=()
# the comment block at the top, however long it grows
usage() { sed -n '2,/^[^#]/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    -n) np=${2:?-n needs a value}; np_set=1; shift 2 ;;
    -r) rounds=${2:?-r needs a value}; shift 2 ;;
    -c) configs=${2:?-c needs a value}; configs_set=1; shift 2 ;;
    -b) baseline=${2:?-b needs a value}; baseline_set=1; shift 2 ;;
    --overlap) overlap=1; shift ;;
    --two-level) two_level=${2:?--two-level needs a value}; shift 2 ;;
    -o) out=${2:?-o needs a value}; shift 2 ;;
    -t) limit=${2:?-t needs a value}; shift 2 ;;
    --plot) plot=${2:?--plot needs a value}; shift 2 ;;
    --dtype) dtype=${2:?--dtype needs a value}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "$me: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
    esac
done
for v in "$np" "$rounds" "$limit"; do
    case "$v" in
    ''|*[!0-9]*|0) echo "$me: '$v' is not a positive count" >&2; exit 2 ;;
    esac
done
if [ $overlap = 1 ]; then
    [ $configs_set = 1 ] || configs=numacoll,libnbc
    [ $baseline_set = 1 ] || baseline=libnbc
    [ ${#bench_args[@]} -gt 0 ] || bench_args=(--ops bcast,allreduce)
    bench_args=(--overlap "${bench_args[@]}")
fi
# two levels: N virtual nodes, dealt by blocks or round-robin
tl_nodes="" tl_split=block
if [ -n "$two_level" ]; then
    tl_nodes=${two_level%%:*}
    case "$two_level" in *:*) tl_split=${two_level#*:} ;; esac
    case "$tl_nodes" in
    ''|*[!0-9]*|0|1) echo "$me: --two-level '$two_level': N must be 2 or more" >&2; exit 2 ;;
    esac
    case "$tl_split" in
    block|rr) ;;
    *) echo "$me: --two-level '$two_level': the split is block or rr" >&2; exit 2 ;;
    esac
    [ $np_set = 1 ] || np=4
    [ $configs_set = 1 ] || configs=numacoll,tuned
    [ ${#bench_args[@]} -gt 0 ] ||
        bench_args=(--ops bcast,allreduce --sizes 8,1k,64k,1m,4m)
fi
if [ -n "$dtype" ]; then
    [ ${#bench_args[@]} -gt 0 ] || bench_args=(--ops reduce,allreduce)
    bench_args+=(--dtype "$dtype")
fi
[ ${#bench_args[@]} -gt 0 ] || bench_args=(--ops bcast)

# the buffers' alignment and the timing loops of the runs, for the header
# (numacoll-bench-mpi checks the values; the last one given counts)
align="malloc (default: wherever malloc puts the buffers, as applications)"
loop="both (default: b2b and app)"
for ((i = 0; i < ${#bench_args[@]}; i++)); do
    a=${bench_args[$i]} next=${bench_args[$((i + 1))]:-}
    case "$a" in
    --align) align=$next ;;
    --align=*) align=${a#--align=} ;;
    --loop) loop=$next ;;
    --loop=*) loop=${a#--loop=} ;;
    esac
done
case "$align" in
malloc) align="malloc (wherever malloc puts the buffers, as applications)" ;;
sweep) align="sweep (offsets 0 8 16 32 48 64 past a page, best and worst per size)" ;;
[0-9]*) align="$align bytes past a page, every buffer of every rank" ;;
esac

IFS=, read -r -a wanted <<<"$configs"
for c in "${wanted[@]}"; do
    case "$c" in
    numacoll|tuned|sm|han|basic|libnbc) ;;
    *) echo "$me: unknown configuration '$c' (numacoll, tuned, sm, han, basic, libnbc)" >&2
       exit 2 ;;
    esac
done

build=${NC_BUILD:-build}
bin=$build/numacoll-bench-mpi
merge=$build/numacoll-bench
so=$build/mca_coll_numacoll.so
if ! command -v mpirun >/dev/null 2>&1; then
    echo "$me: mpirun not found (Debian: apt-get install openmpi-bin libopenmpi-dev)" >&2
    exit 2
fi
need=("$bin")
[ $overlap = 1 ] || need+=("$merge")   # the overlap table is merged here
for f in "${need[@]}"; do
    if [ ! -x "$f" ]; then
        echo "$me: $f not found; build it with 'make'" >&2
        exit 2
    fi
done

list=()
for c in "${wanted[@]}"; do
    if [ "$c" = numacoll ] && [ ! -f "$so" ]; then
        echo "$me: $so not found (build it with 'make ompi'); comparing without numacoll"
        continue
    fi
    list+=("$c")
done
if [ ${#list[@]} -eq 0 ]; then
    echo "$me: no configuration left to run" >&2
    exit 2
fi
case " ${list[*]} " in *" $baseline "*) ;; *) baseline=${list[0]} ;; esac

if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/compare-ompi.XXXXXX")
fi
mkdir -p "$out"
rm -f "$out"/*.csv "$out"/*.log

# Open MPI refuses root without these; we only ever run on this machine.
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
cpus=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
if [ "$np" -gt "$cpus" ]; then
    place=(--oversubscribe --bind-to none)
else
    place=(--bind-to core)
fi
ompi_dir=$(ompi_info --path pkglibdir 2>/dev/null | sed 's/.*: *//')
abs_build=$(cd "$build" && pwd)

# mpirun arguments and environment of one configuration
config_args() {
    case "$1" in
    numacoll) env_add=("OMPI_MCA_mca_base_component_path=$ompi_dir:$abs_build")
              mca=(--mca coll numacoll,tuned,libnbc,basic,self) ;;
    tuned|libnbc) env_add=(); mca=(--mca coll ^numacoll) ;;
    sm)       env_add=(); mca=(--mca coll ^numacoll --mca coll_sm_priority 100) ;;
    han)      env_add=(); mca=(--mca coll ^numacoll --mca coll_han_priority 100) ;;
    basic)    env_add=(); mca=(--mca coll basic,libnbc,self) ;;
    esac
    if [ -n "$tl_nodes" ]; then
        # lo by name: Open MPI 5.0's TCP BTL finds no pairing otherwise
        mca+=(--mca btl self,tcp --mca btl_tcp_if_include lo)
        [ "$1" != numacoll ] || mca+=(--mca coll_numacoll_virtual_nodes "$tl_nodes"
                                      --mca coll_numacoll_virtual_split "$tl_split")
    fi
}

echo "# $me: $(ompi_info --version 2>/dev/null | head -1), np $np, $rounds rounds, results in $out"
[ -z "$tl_nodes" ] || echo "#   two levels: $tl_nodes virtual nodes ($tl_split), every configuration over --mca btl self,tcp"
if [ $overlap = 1 ]; then
    echo "#   overlap (OSU's method, root 0, reused buffers); run options: ${bench_args[*]}"
else
    echo "#   buffers: $align; loop: $loop; run options: ${bench_args[*]}"
fi
for c in "${list[@]}"; do
    config_args "$c"
    echo "#   $c: mpirun -np $np ${place[*]} ${mca[*]}${env_add[*]:+ (${env_add[*]})}"
done

start=$(date +%s)
for ((r = 1; r <= rounds; r++)); do
    order=("${list[@]}")
    if [ $((r % 2)) -eq 0 ]; then  # reverse every other round
        order=()
        for ((i = ${#list[@]} - 1; i >= 0; i--)); do order+=("${list[$i]}"); done
    fi
    for c in "${order[@]}"; do
        config_args "$c"
        t0=$(date +%s.%N)
        log=$out/$c.$r.log
        if ! env "${env_add[@]}" timeout "$limit" mpirun -np "$np" "${place[@]}" \
                "${mca[@]}" "$bin" --label "$c" --csv "$out/$c.$r.csv" \
                "${bench_args[@]}" >"$log" 2>&1; then
            echo "$me: run $r of $c failed; its output ($log):" >&2
            tail -n 30 "$log" >&2
            exit 1
        fi
        t1=$(date +%s.%N)
        note=$(grep -o 'numacoll component (MPI_T.*' "$log" || true)
        printf '#   round %d/%d  %-9s %6.1f s%s\n' "$r" "$rounds" "$c" \
            "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "${note:+   $note}"
        if [ "$c" = numacoll ] && [ -n "$note" ] &&
           echo "$note" | grep -q ': 0 calls through numacoll'; then
            echo "$me: warning: numacoll was loaded but ran none of the calls (it declined this communicator; see --mca coll_base_verbose 10)" >&2
        fi
    done
done

files=()
for c in "${list[@]}"; do
    for ((r = 1; r <= rounds; r++)); do files+=("$out/$c.$r.csv"); done
done
echo "# $((${#list[@]} * rounds)) runs in $(( $(date +%s) - start )) s"
if [ $overlap = 1 ]; then
    # Medians over the rounds per (operation, size, configuration), then
    # one line per size: each configuration's start+wait, total and
    # overlap %, and start+wait over the baseline's.
    head -n 1 "${files[0]}" >"$out/merged.csv"
    for f in "${files[@]}"; do tail -n +2 "$f"; done >>"$out/merged.csv"
    awk -F, -v base="$baseline" -v cfgs="${list[*]}" '
    function med(key,   n, i, j, x, v) {
        n = cnt[key]
        for (i = 1; i <= n; i++) v[i] = val[key, i]
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    NR == 1 { next }
    $13 != "ok" { bad[$2, $5, $3] = $13; next }
    {
        if (!(($2, $5) in seen)) { seen[$2, $5] = 1; rows[++nr] = $2 SUBSEP $5 }
        if (!($2 in opseen)) { opseen[$2] = 1; ops[++nops] = $2 }
        for (c = 8; c <= 12; c++) { k = $2 SUBSEP $5 SUBSEP $3 SUBSEP c; cnt[k]++; val[k, cnt[k]] = $c }
    }
    END {
        nc = split(cfgs, cf, " ")
        printf "# medians over the rounds; microseconds; ov%% = overlap %%; x %s = start+wait over %s%s\n", base, base, "'"'"'s"
        for (o = 1; o <= nops; o++) {
            printf "#\n# %s\n#%9s", ops[o], "bytes"
            for (i = 1; i <= nc; i++)
                printf " | %-10s %9s %9s %9s %6s%s", cf[i], "blocking", "st+wait", "total", "ov%", cf[i] == base ? "" : sprintf(" %8s", "x " base)
            printf "\n"
            for (r = 1; r <= nr; r++) {
                split(rows[r], rk, SUBSEP)
                if (rk[1] != ops[o]) continue
                printf "%10s", rk[2]
                for (i = 1; i <= nc; i++) {
                    k = rk[1] SUBSEP rk[2] SUBSEP cf[i]
                    if (!((k SUBSEP 9) in cnt)) { printf " | %-10s %36s", cf[i], "n/a"; continue }
                    printf " | %-10s %9.3f %9.3f %9.3f %6.1f", "", med(k SUBSEP 8), med(k SUBSEP 9), med(k SUBSEP 11), med(k SUBSEP 12)
                    if (cf[i] != base) {
                        kb = rk[1] SUBSEP rk[2] SUBSEP base SUBSEP 9
                        if (kb in cnt) printf " %8.2f", med(k SUBSEP 9) / med(kb)
                        else printf " %8s", "n/a"
                    }
                }
                printf "\n"
            }
        }
    }' "$out/merged.csv"
    exit 0
fi
exec "$merge" --merge --baseline "$baseline" --csv "$out/merged.csv" \
    --json "$out/merged.json" ${plot:+--plot "$plot"} "${files[@]}"

#!/bin/sh
# The layering of coll/ (coll/team.h's opening comment) has no circle: no
# file of coll/ calls, directly or through others, into a file that calls
# it back. Checked on the built objects (who defines and who uses each
# symbol), so an #include cannot hide a call. Usage: tests/layers.sh BUILD
set -eu
build=${1:-build}
objs=$(find "$build/coll" -name '*.o' | sort)
[ -n "$objs" ] || { echo "layers: no objects under $build/coll"; exit 1; }
edges=$(for o in $objs; do
    f=${o#"$build"/coll/}
    nm "$o" | awk -v f="${f%.o}" '$1 == "U" {print "U", f, $2}
        NF == 3 && $2 ~ /^[TDBR]$/ {print "D", f, $3}'
done | awk '$1 == "D" {def[$3] = $2; next} {use[++n] = $2 " " $3}
    END {for (i = 1; i <= n; i++) {split(use[i], u, " ")
             if ((u[2] in def) && def[u[2]] != u[1]) print u[1], def[u[2]]}}' |
    sort -u)
# no uses at all means nm's output was not read, not that there is no circle
[ -n "$edges" ] || { echo "layers: FAIL, no uses found among $build/coll's objects"; exit 1; }
if ! out=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [ -n "$out" ]; then
    echo "layers: FAIL, coll/'s files call each other in a circle:"
    printf '%s\n' "$out"
    exit 1
fi
echo "layers: PASS ($(echo "$objs" | wc -w) files of coll/, $(printf '%s\n' "$edges" | wc -l) uses, no circle)"

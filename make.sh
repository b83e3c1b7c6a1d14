#!/bin/bash
# ./make.sh [make arguments]: on Debian, install the packages of deps.txt
# that are missing, then run make with the arguments (`./make.sh bench`,
# `./make.sh check`). A fresh machine has no make and no compiler, so this,
# not make, is the first command. Installs with apt-get as root, through
# sudo otherwise; with neither, prints the one command to run and fails.
#   ./make.sh --deps-only    install what is missing, run nothing
#                            (what `make bench` and `make check` call)
set -euo pipefail
cd "$(dirname "$0")"

pkgs=$(sed 's/#.*//' deps.txt)
if command -v dpkg-query >/dev/null 2>&1; then
    missing=()
    for p in $pkgs; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
            missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        if [ "$(id -u)" = 0 ]; then
            sudo=()
        elif command -v sudo >/dev/null 2>&1; then
            sudo=(sudo)
        else
            echo "numacoll: missing packages; as root, run: apt-get update && apt-get install -y ${missing[*]}" >&2
            exit 2
        fi
        echo "numacoll: installing the missing packages: ${missing[*]}" >&2
        # env: sudo drops the caller's environment
        "${sudo[@]}" apt-get update -qq >&2
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
            apt-get install -y -qq "${missing[@]}" >&2
    fi
else
    echo "numacoll: not Debian (no dpkg-query); install the equivalents of deps.txt yourself" >&2
fi

[ "${1:-}" = --deps-only ] && exit 0
exec make "$@"

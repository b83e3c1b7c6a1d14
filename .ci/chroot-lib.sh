# shellcheck shell=bash
# .ci/chroot-lib.sh -- shared by .ci/deb-test and .ci/fresh-chroot (sourced,
# not run). A cached `debootstrap --variant=minbase bookworm` base, a fresh
# copy of it per run, the mounts a chroot needs, and a cleanup that undoes
# all of it (run it from an EXIT trap).
#
#   NC_CHROOT_CACHE  the cached base (default /var/cache/numacoll-ci/bookworm-minbase);
#                    created on first use, reused afterwards. Delete it to
#                    start from a new debootstrap.
#   NC_MIRROR        the Debian mirror (default: the first deb.debian.org-style
#                    URI of this machine's apt sources, else http://deb.debian.org/debian)
#   NC_SUITE         default bookworm
#
# Needs root (debootstrap, mount, chroot).

NC_SUITE=${NC_SUITE:-bookworm}
NC_CHROOT_CACHE=${NC_CHROOT_CACHE:-/var/cache/numacoll-ci/$NC_SUITE-minbase}

nc_log() { printf '%s %s\n' "[$(date +%H:%M:%S)]" "$*" >&2; }
nc_die() { nc_log "error: $*"; exit 1; }

# The mirror this machine's apt uses for Debian itself (not -security, not
# third-party repositories).
nc_mirror() {
    if [ -n "${NC_MIRROR:-}" ]; then echo "$NC_MIRROR"; return; fi
    local m
    m=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        sed -n 's/^URIs: *//p' | tr ' ' '\n' |
        grep -E '/debian/?$' | head -n 1)
    [ -n "$m" ] || m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }')
    echo "${m:-http://deb.debian.org/debian}"
}

nc_need_root() {
    [ "$(id -u)" = 0 ] || nc_die "must run as root (debootstrap, mount, chroot); try: sudo $0"
}

nc_need_tools() {  # nc_need_tools <package>...: apt-get install what is missing
    local missing="" p
    for p in "$@"; do dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"; done
    [ -z "$missing" ] && return 0
    nc_log "installing on this machine:$missing"
    apt-get update -qq
    # shellcheck disable=SC2086  # one word per package
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
}

# The cached base: debootstrap into a temporary folder next to it, then a
# rename, so an interrupted debootstrap never leaves a half base behind.
nc_base() {
    if [ -f "$NC_CHROOT_CACHE/.numacoll-base-ok" ]; then
        nc_log "reusing cached base $NC_CHROOT_CACHE"
        return 0
    fi
    nc_need_tools debootstrap
    local mirror tmp
    mirror=$(nc_mirror)
    mkdir -p "$(dirname "$NC_CHROOT_CACHE")"
    rm -rf --one-file-system "$NC_CHROOT_CACHE.new"
    tmp=$NC_CHROOT_CACHE.new
    nc_log "debootstrap --variant=minbase $NC_SUITE $tmp $mirror (once; cached afterwards)"
    debootstrap --variant=minbase "$NC_SUITE" "$tmp" "$mirror" \
        >"$tmp.log" 2>&1 || { tail -n 20 "$tmp.log" >&2; nc_die "debootstrap failed (log: $tmp.log)"; }
    # The suites a Debian 12 install has: the release, its updates and
    # security (what this machine has too, so packages built here against
    # updated libraries install there).
    cat >"$tmp/etc/apt/sources.list" <<EOF
deb $mirror $NC_SUITE main
deb $mirror $NC_SUITE-updates main
deb ${mirror%/debian*}/debian-security $NC_SUITE-security main
EOF
    # No daemons started by package scripts inside the chroot.
    printf '#!/bin/sh\nexit 101\n' >"$tmp/usr/sbin/policy-rc.d"
    chmod 755 "$tmp/usr/sbin/policy-rc.d"
    date -u +%FT%TZ >"$tmp/.numacoll-base-ok"
    mv "$tmp.log" "$tmp/.numacoll-debootstrap.log"
    mv "$tmp" "$NC_CHROOT_CACHE"
    nc_log "cached base ready: $NC_CHROOT_CACHE ($(du -sh "$NC_CHROOT_CACHE" | cut -f1))"
}

# nc_new_root <dir>: a fresh copy of the cached base (a clean system per
# run: nothing a previous run installed is there).
nc_new_root() {
    local dir=$1
    nc_base
    [ ! -e "$dir" ] || nc_die "$dir already exists"
    nc_log "copying the base into $dir"
    cp -a --reflink=auto "$NC_CHROOT_CACHE" "$dir"
    rm -f "$dir/.numacoll-base-ok"
    cp -L /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    NC_ROOT=$dir
}

NC_MOUNTS=()
nc_mount() {  # nc_mount <mount args...> <target>: mount, and remember it
    local target=${!#}
    mkdir -p "$target"
    mount "$@" || nc_die "mount $* failed"
    NC_MOUNTS+=("$target")
}

# The root itself, bound onto itself so that "/" is a mount point inside
# as on a real machine (a program that makes its own mount namespace and
# remounts "/" private, as tests/test_seg.c does, fails with EINVAL on a
# plain directory); /proc, /sys, /dev (this machine's, bound, made private
# so that nothing mounted under it reaches the host's /dev), /dev/pts, and
# a tmpfs of its own on /dev/shm (numacoll's segments; Open MPI's shared
# memory).
nc_mount_all() {
    local r=$NC_ROOT
    nc_mount --bind "$r" "$r"
    mount --make-private "$r"
    nc_mount -t proc proc "$r/proc"
    nc_mount -t sysfs sysfs "$r/sys"
    nc_mount --bind /dev "$r/dev"
    mount --make-private "$r/dev"
    nc_mount --bind /dev/pts "$r/dev/pts"
    nc_mount -t tmpfs -o "mode=1777,size=${NC_SHM_SIZE:-50%}" tmpfs "$r/dev/shm"
}

# Run a command inside, as root, with a clean environment (no PATH tricks,
# no LD_LIBRARY_PATH, nothing of the host's shell).
nc_in() {
    chroot "$NC_ROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        DEBIAN_FRONTEND=noninteractive "$@"
}

# Stop what still runs inside (processes whose root is the chroot, by pid)
# and unmount in reverse order; the files stay (a cached system reuses them).
nc_umount_all() {
    local r=${NC_ROOT:-} i pid
    [ -n "$r" ] && [ -d "$r" ] || return 0
    for pid in /proc/[0-9]*; do
        pid=${pid#/proc/}
        [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$r" ] && kill -9 "$pid" 2>/dev/null
    done
    for ((i = ${#NC_MOUNTS[@]} - 1; i >= 0; i--)); do
        umount "${NC_MOUNTS[i]}" 2>/dev/null || umount -l "${NC_MOUNTS[i]}" 2>/dev/null ||
            nc_log "could not unmount ${NC_MOUNTS[i]}"
    done
    NC_MOUNTS=()
}

# Undo everything: nc_umount_all, then delete the copy -- only when nothing
# is mounted under it any more (never rm -rf across a bound /dev).
nc_cleanup() {
    local r=${NC_ROOT:-} left
    [ -n "$r" ] && [ -d "$r" ] || return 0
    nc_umount_all
    left=$(awk -v r="$r" 'index($2, r "/") == 1 || $2 == r { print $2 }' /proc/mounts)
    if [ -n "$left" ]; then
        nc_log "still mounted, $r kept: $left"
        return 1
    fi
    if [ -n "${NC_KEEP:-}" ]; then
        nc_log "NC_KEEP set: $r kept"
    else
        rm -rf --one-file-system "$r"
    fi
}

# nc_copy_tree <src> <dst>: the working tree as it is now (uncommitted work
# included), without .git, build folders and packaging by-products.
nc_copy_tree() {
    local src=$1 dst=$2
    mkdir -p "$dst"
    tar -C "$src" -cf - \
        --exclude=./.git --exclude='./build' --exclude='./build-*' \
        --exclude=./debian/.debhelper --exclude=./debian/tmp \
        --exclude=./debian/files --exclude='./debian/*.substvars' \
        --exclude=./debian/debhelper-build-stamp \
        --exclude=./debian/libnumacoll0 --exclude=./debian/libnumacoll-dev \
        --exclude=./debian/numacoll-tools --exclude=./debian/openmpi-coll-numacoll \
        . | tar -C "$dst" -xf -
}

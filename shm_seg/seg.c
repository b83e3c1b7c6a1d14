/*
 * Segments on tmpfs (seg.h says why they never have a name), placed per
 * block on the NUMA node of the rank that owns the block: bind (mbind)
 * before anything is allocated, then reserve with fallocate, which
 * allocates under the binding; move_pages() verifies what was touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "shm_seg/seg.h"

static atomic_uint seg_counter;

static void make_name(char *out)
{
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    host[20] = '\0';
    /* keep the name a single path component of safe characters */
    for (char *c = host; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '-'))
            *c = '_';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned rnd = (unsigned)ts.tv_nsec ^ ((unsigned)getpid() << 16);
    snprintf(out, NC_SEG_NAME_MAX, "/numacoll-%u-%s-%d-%u-%08x",
             (unsigned)getuid(), host, (int)getpid(),
             atomic_fetch_add_explicit(&seg_counter, 1, memory_order_relaxed),
             rnd);
}

uint64_t nc__seg_avail(void)
{
    struct statvfs sv;
    if (statvfs(NC_SEG_DIR, &sv) != 0)
        return 0;
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

static int map_fd(int fd, size_t len, unsigned char **base, const char *what,
                  char *msg, size_t msglen)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        snprintf(msg, msglen, "numacoll: cannot map %zu bytes of %s: %s", len,
                 what, strerror(errno));
        return NUMACOLL_ERR_SYS;
    }
    *base = p;
    return NUMACOLL_OK;
}

/* An unnamed file in /dev/shm. O_TMPFILE gives one that never had a name;
 * without it (a file system that lacks it) the name lives for the two
 * system calls between shm_open and shm_unlink. */
static int open_unnamed(const char *name)
{
    int fd = open(NC_SEG_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd >= 0)
        shm_unlink(name);
    return fd;
}

int nc__seg_create(size_t len, size_t need, char *name_out, int *fd_out,
                   nc__seg_id_t *id,
                   unsigned char **base, uint64_t *avail, char *msg,
                   size_t msglen)
{
    *fd_out = -1;
    /* An early, cheap verdict; the reservation (nc__seg_reserve) is the one
     * that holds when teams are created at once. */
    struct statvfs sv;
    if (statvfs(NC_SEG_DIR, &sv) == 0 &&
        (uint64_t)sv.f_bavail * sv.f_frsize < need) {
        *avail = (uint64_t)sv.f_bavail * sv.f_frsize;
        snprintf(msg, msglen, "numacoll: " NC_SEG_DIR " has %llu bytes free, "
                 "the segment needs %zu at first", (unsigned long long)*avail,
                 need);
        return NUMACOLL_ERR_NOMEM;
    }
    make_name(name_out);
    int fd = open_unnamed(name_out);
    if (fd < 0) {
        int err = errno;
        snprintf(msg, msglen, "numacoll: cannot create a file in " NC_SEG_DIR
                 ": %s", strerror(err));
        *avail = nc__seg_avail();   /* ENOSPC: out of inodes, or of room */
        return err == ENOSPC ? NUMACOLL_ERR_NOMEM : NUMACOLL_ERR_SYS;
    }
    struct stat st;
    int rc = NUMACOLL_ERR_SYS;
    if (ftruncate(fd, (off_t)len) != 0)
        snprintf(msg, msglen, "numacoll: cannot size the segment %s to %zu "
                 "bytes: %s", name_out, len, strerror(errno));
    else if (fstat(fd, &st) != 0)
        snprintf(msg, msglen, "numacoll: fstat of the segment %s: %s",
                 name_out, strerror(errno));
    else
        rc = map_fd(fd, len, base, name_out, msg, msglen);
    if (rc != NUMACOLL_OK) {
        close(fd);
        return rc;
    }
    *id = (nc__seg_id_t){(uint64_t)st.st_dev, (uint64_t)st.st_ino};
    *fd_out = fd;
    return NUMACOLL_OK;
}

int nc__seg_attach(int pid, int fd, const nc__seg_id_t *id, size_t len,
                   int *fd_out, unsigned char **base, char *msg,
                   size_t msglen)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", pid, fd);
    *fd_out = -1;
    int my = open(path, O_RDWR | O_CLOEXEC);
    if (my < 0) {
        snprintf(msg, msglen, "numacoll: cannot open rank 0's segment "
                 "through %s: %s (the ranks of a team must share a pid "
                 "namespace with /proc mounted)", path, strerror(errno));
        return NUMACOLL_ERR_SYS;
    }
    struct stat st;
    if (fstat(my, &st) != 0 || (uint64_t)st.st_dev != id->dev ||
        (uint64_t)st.st_ino != id->ino || (uint64_t)st.st_size < len) {
        snprintf(msg, msglen, "numacoll: %s is not rank 0's segment of %zu "
                 "bytes", path, len);
        close(my);
        return NUMACOLL_ERR_SYS;
    }
    int rc = map_fd(my, len, base, path, msg, msglen);
    if (rc != NUMACOLL_OK) {
        close(my);
        return rc;
    }
    *fd_out = my;
    return NUMACOLL_OK;
}

int nc__seg_reserve(int fd, size_t off, size_t len)
{
    if (len == 0)
        return 0;
    int rc;
    /* tmpfs gives up on a pending signal (and undoes what it allocated) */
    do
        rc = fallocate(fd, 0, (off_t)off, (off_t)len);
    while (rc != 0 && errno == EINTR);
    return rc == 0 ? 0 : -errno;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23   /* Linux 5.14; older headers lack it */
#endif

uint64_t nc__seg_used(uint64_t *size)
{
    struct statvfs sv;
    if (statvfs(NC_SEG_DIR, &sv) != 0) {
        if (size)
            *size = 0;
        return 0;
    }
    if (size)
        *size = (uint64_t)sv.f_blocks * sv.f_frsize;
    return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

int nc__seg_populate(void *addr, size_t len)
{
    if (len == 0)
        return 0;
    int rc;
    do
        rc = madvise(addr, len, MADV_POPULATE_WRITE);
    while (rc != 0 && errno == EINTR);
    if (rc == 0) {
        /* the pages stay in the file; only this process's mappings of
         * them go, so that it counts in RSS what it touches, as after a
         * fallocate (on a shared mapping MADV_DONTNEED drops no data) */
        madvise(addr, len, MADV_DONTNEED);
        return 0;
    }
    int err = errno;
    /* the part allocated before the failure would stay counted */
    if (err != EINVAL)
        madvise(addr, len, MADV_REMOVE);
    return -err;
}

int nc__seg_release(void *addr, size_t len)
{
    if (len == 0)
        return 0;
    return madvise(addr, len, MADV_REMOVE) == 0 ? 0 : -errno;
}

int nc__seg_can_populate(void)
{
    static atomic_int known = -1;
    int v = atomic_load_explicit(&known, memory_order_acquire);
    if (v >= 0)
        return v;
    /* one page of a private mapping: the kernel either knows the advice
     * or answers EINVAL, whatever the memory is */
    long page = sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    v = 0;
    if (p != MAP_FAILED) {
        v = madvise(p, (size_t)page, MADV_POPULATE_WRITE) == 0;
        munmap(p, (size_t)page);
    }
    atomic_store_explicit(&known, v, memory_order_release);
    return v;
}

void nc__seg_unmap(unsigned char *base, size_t len)
{
    if (base)
        munmap(base, len);
}

int nc__seg_effective_node(int node, int *degraded)
{
    *degraded = 0;
    if (numa_available() < 0)
        return -1;
    struct bitmask *allowed = numa_get_mems_allowed();
    if (!allowed)
        return -1;
    int result = -1;
    if (node >= 0 && (unsigned)node < allowed->size &&
        numa_bitmask_isbitset(allowed, (unsigned)node)) {
        result = node;
    } else {
        unsigned count = numa_bitmask_weight(allowed);
        if (count > 0) {
            unsigned want = node < 0 ? 0 : (unsigned)node % count;
            for (unsigned i = 0; i < allowed->size; i++)
                if (numa_bitmask_isbitset(allowed, i) && want-- == 0) {
                    result = (int)i;
                    break;
                }
        }
        *degraded = 1;
    }
    numa_bitmask_free(allowed);
    return result;
}

int nc__seg_bind(void *addr, size_t len, int node)
{
    if (node < 0 || len == 0)
        return 0;
    unsigned long mask[16] = {0};
    unsigned long bits = 8 * sizeof(unsigned long);
    if ((unsigned long)node >= bits * 16)
        return -EINVAL;
    mask[node / bits] |= 1UL << (node % bits);
    if (mbind(addr, len, MPOL_PREFERRED, mask, bits * 16, 0) != 0)
        return -errno;
    return 0;
}

int nc__seg_verify(void *addr, size_t len, int node, size_t *pages,
                   size_t *on_node, size_t *unknown)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t n = len / page;
    *pages = n;
    *on_node = *unknown = 0;
    if (n == 0)
        return 0;
    void **addrs = malloc(n * sizeof *addrs);
    int *status = malloc(n * sizeof *status);
    if (!addrs || !status) {
        free(addrs);
        free(status);
        *unknown = n;
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        addrs[i] = (unsigned char *)addr + i * page;
    int rc = 0;
    /* nodes == NULL: query only, nothing moves */
    if (move_pages(0, n, addrs, NULL, status, 0) != 0) {
        rc = -errno;
        *unknown = n;
    } else {
        for (size_t i = 0; i < n; i++) {
            if (status[i] < 0)
                (*unknown)++;
            else if (status[i] == node)
                (*on_node)++;
        }
    }
    free(addrs);
    free(status);
    return rc;
}

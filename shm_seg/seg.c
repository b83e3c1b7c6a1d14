/*
 * POSIX shared memory on tmpfs, placed per block on the NUMA node of the
 * rank that owns the block: bind (mbind) before the first touch, then let
 * the owner touch it, then verify with move_pages(). The paper relied on
 * first touch alone; on shared memory the binding holds whoever touches
 * first, which removes the dependence on who faults a page in.
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

static int map_fd(int fd, size_t len, unsigned char **base, const char *name,
                  char *msg, size_t msglen)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int err = errno;
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(msg, msglen, "numacoll: cannot map %zu bytes of %s: %s", len,
                 name, strerror(err));
        return NUMACOLL_ERR_SYS;
    }
    *base = p;
    return NUMACOLL_OK;
}

int nc__seg_create(size_t len, char *name_out, unsigned char **base,
                   char *msg, size_t msglen)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) == 0 &&
        (unsigned long long)sv.f_bavail * sv.f_frsize < len) {
        snprintf(msg, msglen,
                 "numacoll: /dev/shm has %llu bytes free, the segment needs "
                 "%zu", (unsigned long long)sv.f_bavail * sv.f_frsize, len);
        return NUMACOLL_ERR_NOMEM;
    }
    make_name(name_out);
    int fd = shm_open(name_out, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        snprintf(msg, msglen, "numacoll: shm_open(%s) failed: %s", name_out,
                 strerror(errno));
        return NUMACOLL_ERR_SYS;
    }
    if (ftruncate(fd, (off_t)len) != 0) {
        snprintf(msg, msglen, "numacoll: cannot size %s to %zu bytes: %s",
                 name_out, len, strerror(errno));
        close(fd);
        shm_unlink(name_out);
        return NUMACOLL_ERR_SYS;
    }
    int rc = map_fd(fd, len, base, name_out, msg, msglen);
    if (rc != NUMACOLL_OK)
        shm_unlink(name_out);
    return rc;
}

int nc__seg_attach(const char *name, size_t len, unsigned char **base,
                   char *msg, size_t msglen)
{
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) {
        snprintf(msg, msglen, "numacoll: cannot open segment %s: %s", name,
                 strerror(errno));
        return NUMACOLL_ERR_SYS;
    }
    return map_fd(fd, len, base, name, msg, msglen);
}

void nc__seg_unlink(const char *name)
{
    shm_unlink(name);
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

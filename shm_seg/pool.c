/*
 * The per-process pool of segments of freed teams (seg.h says when one is
 * reused). A small array under one lock: creations and destructions are
 * rare next to collectives, and the pool holds a handful of entries.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "shm_seg/seg.h"

typedef struct pool_entry {
    int used;
    int claimed;        /* by a creation that has not decided yet */
    uint64_t stamp;     /* order of puts: the smallest is evicted first */
    uint64_t *key;
    size_t nkey;
    nc__seg_pooled_t seg;
} pool_entry_t;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pool_entry_t pool[NC_SEG_POOL_MAX];
static uint64_t pool_stamp;
static int pool_env = -2;   /* NUMACOLL_SEG_POOL; -2: not read yet */
static int pool_forced = -1;

static int same_id(const nc__seg_id_t *a, const nc__seg_id_t *b)
{
    return a->dev == b->dev && a->ino == b->ino;
}

/* With pool_lock held. */
static int limit_locked(void)
{
    if (pool_forced >= 0)
        return pool_forced;
    if (pool_env == -2) {
        const char *v = getenv("NUMACOLL_SEG_POOL");
        char *end;
        long n = v && *v ? strtol(v, &end, 10) : 4;
        if (v && *v && (*end || n < 0))
            n = 4;      /* not a count: keep the default */
        pool_env = n > NC_SEG_POOL_MAX ? NC_SEG_POOL_MAX : (int)n;
    }
    return pool_env;
}

static void drop(pool_entry_t *e)
{
    nc__seg_unmap(e->seg.base, e->seg.len);
    free(e->key);
    *e = (pool_entry_t){0};
}

/* Unmap the oldest unclaimed entries until at most `keep` are left,
 * holding at most `bytes` of segments. */
static void trim_locked(int keep, size_t bytes)
{
    for (;;) {
        int n = 0;
        size_t held = 0;
        pool_entry_t *oldest = NULL;
        for (int i = 0; i < NC_SEG_POOL_MAX; i++) {
            if (!pool[i].used)
                continue;
            n++;
            held += pool[i].seg.len;
            if (!pool[i].claimed &&
                (!oldest || pool[i].stamp < oldest->stamp))
                oldest = &pool[i];
        }
        if ((n <= keep && held <= bytes) || !oldest)
            return;
        drop(oldest);
    }
}

int nc__seg_pool_claim(const uint64_t *key, size_t nkey, nc__seg_id_t *ids,
                       int max)
{
    int n = 0;
    pthread_mutex_lock(&pool_lock);
    while (n < max) {
        pool_entry_t *best = NULL;
        for (int i = 0; i < NC_SEG_POOL_MAX; i++) {
            pool_entry_t *e = &pool[i];
            if (e->used && !e->claimed && e->nkey == nkey &&
                memcmp(e->key, key, nkey * sizeof *key) == 0 &&
                (!best || e->stamp > best->stamp))
                best = e;
        }
        if (!best)
            break;
        best->claimed = 1;
        ids[n++] = best->seg.id;
    }
    pthread_mutex_unlock(&pool_lock);
    return n;
}

int nc__seg_pool_take(const nc__seg_id_t *id, nc__seg_pooled_t *out)
{
    int rc = -1;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < NC_SEG_POOL_MAX && rc != 0; i++) {
        pool_entry_t *e = &pool[i];
        if (e->used && e->claimed && same_id(&e->seg.id, id)) {
            *out = e->seg;
            free(e->key);
            *e = (pool_entry_t){0};
            rc = 0;
        }
    }
    pthread_mutex_unlock(&pool_lock);
    return rc;
}

void nc__seg_pool_release(const nc__seg_id_t *ids, int n)
{
    pthread_mutex_lock(&pool_lock);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < NC_SEG_POOL_MAX; i++)
            if (pool[i].used && pool[i].claimed &&
                same_id(&pool[i].seg.id, &ids[k]))
                pool[i].claimed = 0;
    /* puts made while these were claimed may have left too many */
    trim_locked(limit_locked(), NC_SEG_POOL_BYTES);
    pthread_mutex_unlock(&pool_lock);
}

void nc__seg_pool_put(const uint64_t *key, size_t nkey,
                      const nc__seg_pooled_t *seg)
{
    pthread_mutex_lock(&pool_lock);
    int limit = limit_locked();
    pool_entry_t *slot = NULL;
    if (limit > 0 && seg->len <= NC_SEG_POOL_BYTES) {
        trim_locked(limit - 1, NC_SEG_POOL_BYTES - seg->len);
        for (int i = 0; i < NC_SEG_POOL_MAX && !slot; i++)
            if (!pool[i].used)
                slot = &pool[i];
    }
    uint64_t *copy = slot ? malloc(nkey * sizeof *key) : NULL;
    if (!copy) {
        /* off, too large, every slot claimed, or no memory: release it
         * for good */
        nc__seg_unmap(seg->base, seg->len);
    } else {
        memcpy(copy, key, nkey * sizeof *key);
        *slot = (pool_entry_t){.used = 1, .stamp = ++pool_stamp, .key = copy,
                               .nkey = nkey, .seg = *seg};
    }
    pthread_mutex_unlock(&pool_lock);
}

int nc__seg_pool_drain(void)
{
    int n = 0;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < NC_SEG_POOL_MAX; i++)
        if (pool[i].used && !pool[i].claimed) {
            drop(&pool[i]);
            n++;
        }
    pthread_mutex_unlock(&pool_lock);
    return n;
}

int nc__seg_pool_count(void)
{
    int n = 0;
    pthread_mutex_lock(&pool_lock);
    for (int i = 0; i < NC_SEG_POOL_MAX; i++)
        n += pool[i].used;
    pthread_mutex_unlock(&pool_lock);
    return n;
}

int nc__seg_pool_limit(void)
{
    pthread_mutex_lock(&pool_lock);
    int n = limit_locked();
    pthread_mutex_unlock(&pool_lock);
    return n;
}

void nc__seg_pool_set_limit(int n)
{
    pthread_mutex_lock(&pool_lock);
    pool_forced = n < 0 ? -1 : (n > NC_SEG_POOL_MAX ? NC_SEG_POOL_MAX : n);
    trim_locked(limit_locked(), NC_SEG_POOL_BYTES);
    pthread_mutex_unlock(&pool_lock);
}

/* When the library is unloaded (Open MPI closes its components at
 * MPI_Finalize) its pool would otherwise stay mapped until exit; at exit
 * this only does early what the kernel would do. Claimed entries belong to
 * a creation still running in another thread and are left alone. */
__attribute__((destructor)) static void pool_fini(void)
{
    nc__seg_pool_drain();
}

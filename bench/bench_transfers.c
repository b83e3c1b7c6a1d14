/*
 * numacoll-bench --transfers: what one Bcast costs in cache lines that
 * cross a domain boundary, counted from the team's own tree and rule
 * instead of timed, so that level lists can be compared for machines one
 * does not have (a synthetic or XML topology with injected PUs).
 *
 * The count follows the protocols (coll/bcast/), per call, for the rule
 * the team picks at m bytes (f, s, q, tree, k), F = ceil(m/f) fragments,
 * L = ceil(m/64) lines of data; an edge or a reader "crosses level X"
 * when its two ranks sit in different domains of X:
 *  inline     the data rides in the flag: 1 line per crossing edge
 *  pipelined  F notifications per crossing edge; every reader copies the L
 *             lines from the root's queue (tree-independent), or with the
 *             rule's relay=1 from its source (nc__tree_relay_source: a
 *             relay from its parent's copy, a member from its innermost
 *             domain's head's); per bank use (ceil(F / (s/q))) a reader
 *             reads shm_op and decrements shm_nreaders, 2 lines on rank
 *             0's node
 *  cma        every rank copies the L lines from its tree parent, with F
 *             notifications per edge
 * Averaged over every root (the bench's timing rotates the root). The
 * tree of the first size, rooted at 0, is printed too, as parent>{children}
 * for every rank that has children.
 */
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "coll/team.h"
#include "numacoll.h"

static const int count_levels[] = {NUMACOLL_LEVEL_L3, NUMACOLL_LEVEL_NUMA,
                                   NUMACOLL_LEVEL_PACKAGE};
#define NLV ((int)(sizeof count_levels / sizeof count_levels[0]))

static int differ(const numacoll_team_t *t, int a, int b, int lv)
{
    return t->doms[a].id[lv] != t->doms[b].id[lv];
}

/* Lines one Bcast of m bytes from root moves across each level: notif[]
 * notifications (and inline data), data[] copies of data and bank lines. */
static void count_call(const numacoll_team_t *t, const nc__choice_t *ch,
                       const nc__tree_t *tr, int root, size_t m,
                       double notif[NLV], double data[NLV], int *kids)
{
    int p = t->p;
    size_t f = ch->f ? ch->f : m;
    double frags = m ? (double)((m + f - 1) / f) : 1;
    double lines = (double)((m + 63) / 64);
    unsigned per_bank = ch->q ? ch->s / ch->q : 1;
    double banks = per_bank ? (double)(((size_t)frags + per_bank - 1) /
                                       per_bank) : 1;
    int inl = ch->alg == NC_ALG_BCAST_INLINE, cma = ch->alg == NC_ALG_BCAST_CMA;
    for (int r = 0; r < p; r++) {
        int n = nc__tree_children(tr, root, r, kids);
        for (int i = 0; i < n; i++)
            for (int l = 0; l < NLV; l++)
                if (differ(t, r, kids[i], count_levels[l])) {
                    notif[l] += inl ? 1 : frags;
                    data[l] += cma ? lines : 0;
                }
        if (inl || cma || r == root)
            continue;
        int src = ch->relay ? nc__tree_relay_source(tr, root, r) : root;
        for (int l = 0; l < NLV; l++) {
            data[l] += differ(t, r, src, count_levels[l]) ? lines : 0;
            data[l] += differ(t, r, 0, count_levels[l]) ? 2 * banks : 0;
        }
    }
}

static void print_tree(const nc__tree_t *tr, int p, int *kids, FILE *to)
{
    int col = fprintf(to, "#   tree from root 0:");
    for (int r = 0; r < p; r++) {
        int n = nc__tree_children(tr, 0, r, kids);
        if (n == 0)
            continue;
        char item[512];
        int o = snprintf(item, sizeof item, " %d>{", r);
        for (int i = 0; i < n && o < (int)sizeof item; i++)
            o += snprintf(item + o, sizeof item - (size_t)o, "%s%d",
                          i ? "," : "", kids[i]);
        if (o < (int)sizeof item)
            snprintf(item + o, sizeof item - (size_t)o, "}");
        if (col + (int)strlen(item) > 78)
            col = fprintf(to, "\n#    ");
        col += fprintf(to, "%s", item);
    }
    fprintf(to, "\n");
}

void ncb_print_transfers(const ncb_opts_t *o, struct numacoll_team *const *teams,
                         FILE *to)
{
    fprintf(to, "# transfers: cache lines one Bcast moves across the domains "
            "of each level, mean over all roots (bench/bench_transfers.c "
            "says how they are counted)\n");
    fprintf(to, "# %-12s %9s %-10s %-8s %2s %5s | %-26s | %s\n", "config",
            "bytes", "alg", "tree", "k", "relay", "notifications L3/NUMA/pkg",
            "all lines L3/NUMA/pkg");
    for (int c = 0; c < o->ncfg; c++) {
        const numacoll_team_t *t = teams[c];
        int kids[1024];
        for (int i = 0; i < o->nsizes; i++) {
            size_t m = o->sizes[i];
            const nc__choice_t *ch = nc__team_choice(t, NC_COLL_BCAST, m);
            const nc__tree_t *tr = nc__team_tree(t, ch->tree, (int)ch->k, 0, ch->lt);
            if (!tr || nc__tree_max_children(tr) >= (int)(sizeof kids /
                                                         sizeof kids[0])) {
                fprintf(to, "  %-12s %9zu: no tree for this rule\n",
                        o->cfg[c].label, m);
                continue;
            }
            if (i == 0)
                print_tree(tr, t->p, kids, to);
            double notif[NLV] = {0}, data[NLV] = {0};
            for (int root = 0; root < t->p; root++)
                count_call(t, ch, tr, root, m, notif, data, kids);
            const char *tn = numacoll_tree_name((numacoll_tree_kind_t)ch->tree);
            fprintf(to, "  %-12s %9zu %-10s %-8s %2u %5u |", o->cfg[c].label,
                    m, nc__algs[ch->alg].name, tn ? tn : "-", ch->k, ch->relay);
            for (int l = 0; l < NLV; l++)
                fprintf(to, " %8.1f", notif[l] / t->p);
            fprintf(to, " |");
            for (int l = 0; l < NLV; l++)
                fprintf(to, " %10.1f", (notif[l] + data[l]) / t->p);
            fprintf(to, "\n");
        }
    }
}

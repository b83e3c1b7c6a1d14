/*
 * numacoll-bench and its MPI twin, end to end: argument errors (message and
 * exit status 2), CSV and JSON parsed back, a tiny verified run of every
 * operation in both modes, a deliberately spoiled run that the check must
 * catch, --merge on hand-written files, and compare-ompi.sh's table on two
 * configurations. Nothing here depends on a timing. MPI parts are skipped
 * (and say so) where mpirun or the MPI build is missing.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nct.h"

#ifndef NCT_BUILD_DIR
#define NCT_BUILD_DIR "build"
#endif

#define OUT_MAX (256 * 1024)

static char tmpdir[64];
static char out[OUT_MAX];

/* Run a shell command, output (stdout and stderr) into out[]; returns its
 * exit status, or -1 when it did not exit normally. */
static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[2200];
    snprintf(full, sizeof full, "( %s ) 2>&1", cmd);
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    if (!WIFEXITED(st) || WEXITSTATUS(st) == 124) {
        fprintf(stderr, "bench test: '%s' did not finish:\n%s\n", cmd, out);
        return -1;
    }
    return WEXITSTATUS(st);
}

static int contains(const char *needle)
{
    int ok = strstr(out, needle) != NULL;
    if (!ok)
        fprintf(stderr, "bench test: output lacks '%s':\n%s\n", needle, out);
    return ok;
}

static int have_mpi(void)
{
    if (access(NCT_BUILD_DIR "/numacoll-bench-mpi", X_OK) != 0 ||
        run("command -v mpirun") != 0) {
        printf("  (skipped: no mpirun or no %s/numacoll-bench-mpi) ",
               NCT_BUILD_DIR);
        return 0;
    }
    return 1;
}

/* mpirun for the tests: as root when we are, no leak reports from Open
 * MPI's own allocations under the sanitizer build. */
#define MPIRUN "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " \
               "ASAN_OPTIONS=detect_leaks=0 timeout 120 mpirun -np 2 "      \
               "--oversubscribe --bind-to none "

#define BENCH NCT_BUILD_DIR "/numacoll-bench"
#define BENCH_MPI NCT_BUILD_DIR "/numacoll-bench-mpi"

static void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench test: could not remove %s\n", tmpdir);
}

/* A scratch folder for the files the tests write, removed at exit. */
static const char *scratch(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/nct-bench-XXXXXX");
        if (!mkdtemp(tmpdir)) {
            perror("bench test: mkdtemp");
            exit(2);
        }
        atexit(remove_tmpdir);
    }
    return tmpdir;
}

/* ---- arguments ---------------------------------------------------------- */

#define EXPECT_USAGE(args, text)                                            \
    do {                                                                    \
        CU_ASSERT_EQUAL(run("timeout 30 " BENCH " " args), 2);              \
        CU_ASSERT(contains(text));                                          \
    } while (0)

static void test_args(void)
{
    EXPECT_USAGE("--sizes 1,x12", "--sizes: 'x12' is not a size");
    EXPECT_USAGE("--sizes ,", "--sizes: the list is empty");
    EXPECT_USAGE("--sizes 16m:1", "must go up");
    EXPECT_USAGE("--sizes 0", "sizes start at 1 byte");
    EXPECT_USAGE("--sizes 2g", "larger than the limit");
    EXPECT_USAGE("--alg nosuch", "unknown algorithm 'nosuch'");
    EXPECT_USAGE("--ops reduce --alg inline", "takes the tuning table's");
    EXPECT_USAGE("--ops barrier --alg dissem", "--compare 'table=FILE'");
    EXPECT_USAGE("--compare 'default nosuch'", "'nosuch' is neither a tree");
    EXPECT_USAGE("--tree ring", "unknown tree 'ring'");
    EXPECT_USAGE("--reps -3", "--reps: '-3' is not a count");
    EXPECT_USAGE("-p -1", "--procs: '-1' is not a count");
    EXPECT_USAGE("--iters 0", "--iters: '0' is not a count");
    EXPECT_USAGE("--queue 12x", "--queue: '12x' is not a count");
    EXPECT_USAGE("--frag 100", "frag_size");       /* the library's range */
    EXPECT_USAGE("--param nosuch=1", "unknown key 'nosuch'");
    EXPECT_USAGE("--compare 'copy=bogus'", "'bogus' is not a copy variant");
    EXPECT_USAGE("--compare 'default table=/nonexistent/t.txt'",
                 "table: /nonexistent/t.txt: cannot read");
    EXPECT_USAGE("--compare 'default table=tests/tune/bad-syntax.txt'",
                 "table: tests/tune/bad-syntax.txt:");
    EXPECT_USAGE("--param verbose=1,foo", "--param: 'foo' is not name=value");
    EXPECT_USAGE("--param ,", "--param: ',' is not name=value");
    EXPECT_USAGE("--cache warm", "neither cold nor hot");
    EXPECT_USAGE("--ops scans", "unknown operation 'scans'");
    EXPECT_USAGE("--label x", "--label is an MPI option");
    EXPECT_USAGE("--bogus", "unknown option '--bogus'");
    EXPECT_USAGE("--reps", "--reps needs a value");
    EXPECT_USAGE("--baseline zz --compare 'kary chain'", "'zz' is none");
    EXPECT_USAGE("stray", "unexpected argument 'stray'");
    EXPECT_USAGE("--merge", "--merge needs CSV files");
    CU_ASSERT_EQUAL(run(BENCH " --help"), 0);
    CU_ASSERT(contains("--root-shift"));
    CU_ASSERT_EQUAL(run(BENCH " --list-params"), 0);
    CU_ASSERT(contains("frag_size"));
    CU_ASSERT_EQUAL(run(BENCH " --list-algs"), 0);
    CU_ASSERT(contains("pipelined"));
    /* the MPI twin parses before MPI_Init: no mpirun needed for errors */
    if (access(BENCH_MPI, X_OK) == 0) {
        CU_ASSERT_EQUAL(run("timeout 30 " BENCH_MPI " --tree flat"), 2);
        CU_ASSERT(contains("--tree is a standalone option"));
        CU_ASSERT_EQUAL(run("timeout 30 " BENCH_MPI " --sizes 1,x"), 2);
        CU_ASSERT(contains("'x' is not a size"));
    }
}

/* ---- CSV and JSON -------------------------------------------------------- */

/* A JSON reader just strict enough to reject what a careless writer gets
 * wrong: bare NaN/inf, trailing commas, unescaped quotes or controls. */
typedef struct { const char *p; } jp_t;

static void jws(jp_t *j)
{
    while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')
        j->p++;
}

static int jvalue(jp_t *j, int depth);

static int jstring(jp_t *j)
{
    if (*j->p++ != '"')
        return -1;
    for (; *j->p != '"'; j->p++) {
        unsigned char ch = (unsigned char)*j->p;
        if (ch == '\0' || ch < 0x20)
            return -1;
        if (ch == '\\') {
            j->p++;
            if (*j->p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", j->p[i]) ||
                        !j->p[i])
                        return -1;
                j->p += 4;
            } else if (!*j->p || !strchr("\"\\/bfnrt", *j->p)) {
                return -1;
            }
        }
    }
    j->p++;
    return 0;
}

static int jdigits(jp_t *j)
{
    if (*j->p < '0' || *j->p > '9')
        return -1;
    while (*j->p >= '0' && *j->p <= '9')
        j->p++;
    return 0;
}

static int jnumber(jp_t *j)
{
    if (*j->p == '-')
        j->p++;
    if (*j->p == '0')
        j->p++;
    else if (jdigits(j))
        return -1;
    if (*j->p == '.') {
        j->p++;
        if (jdigits(j))
            return -1;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-')
            j->p++;
        if (jdigits(j))
            return -1;
    }
    return 0;
}

static int jseq(jp_t *j, char close, int depth, int object)
{
    j->p++;
    jws(j);
    if (*j->p == close) {
        j->p++;
        return 0;
    }
    for (;;) {
        jws(j);
        if (object) {
            if (jstring(j))
                return -1;
            jws(j);
            if (*j->p++ != ':')
                return -1;
        }
        if (jvalue(j, depth + 1))
            return -1;
        jws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p++ != close)
            return -1;
        return 0;
    }
}

static int jvalue(jp_t *j, int depth)
{
    if (depth > 32)
        return -1;
    jws(j);
    switch (*j->p) {
    case '{': return jseq(j, '}', depth, 1);
    case '[': return jseq(j, ']', depth, 0);
    case '"': return jstring(j);
    case 't': return strncmp(j->p, "true", 4) ? -1 : (j->p += 4, 0);
    case 'f': return strncmp(j->p, "false", 5) ? -1 : (j->p += 5, 0);
    case 'n': return strncmp(j->p, "null", 4) ? -1 : (j->p += 4, 0);
    default: return jnumber(j);
    }
}

static int json_ok(const char *text)
{
    jp_t j = {text};
    if (jvalue(&j, 0))
        return 0;
    jws(&j);
    return *j.p == '\0';
}

static void test_json_reader(void)
{
    CU_ASSERT(json_ok("{\"a\": [1, -2.5e3, null, true, \"x\\\"y\"]}"));
    CU_ASSERT(!json_ok("{\"a\": NaN}"));
    CU_ASSERT(!json_ok("{\"a\": [1,]}"));
    CU_ASSERT(!json_ok("{\"a\": \"tab\there\"}"));
    CU_ASSERT(!json_ok("{\"a\": 1} x"));
    CU_ASSERT(!json_ok("{\"a\": 01}"));
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = malloc(OUT_MAX);
    size_t n = buf ? fread(buf, 1, OUT_MAX - 1, f) : 0;
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* Split a CSV line (quotes as RFC 4180) into at most max fields. */
static int csv_fields(char *line, char **f, int max)
{
    int n = 0;
    char *p = line;
    while (n < max) {
        if (*p == '"') {
            char *o = ++p;
            f[n++] = o;
            while (*p && !(*p == '"' && p[1] != '"'))
                *o++ = (*p == '"') ? (p += 2, '"') : *p++;
            if (*p != '"')
                return -1;
            *o = '\0';
            p++;
        } else {
            f[n++] = p;
            p += strcspn(p, ",");
        }
        if (*p == '\0')
            return n;
        if (*p != ',')
            return -1;
        *p++ = '\0';
    }
    return -1;
}

static void test_csv_json(void)
{
    char csv[128], json[128];
    snprintf(csv, sizeof csv, "%s/run.csv", scratch());
    snprintf(json, sizeof json, "%s/run.json", scratch());
    /* two configurations, one with a comma in its label (CSV quoting) */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 2 --sizes 8,5000 --reps 3 "
                        "--iters 4 --ops all --compare "
                        "'default tree=chain,frag=4k' "
                        "--csv %s --json %s --quiet", csv, json), 0);
    char *text = slurp(csv);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *save = NULL;
    int lines = 0, header_ok = 0, rows_ok = 0;
    for (char *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save), lines++) {
        char *f[32];
        int n = csv_fields(line, f, 32);
        if (lines == 0) {
            header_ok = n == 20 && strcmp(f[0], "mode") == 0 &&
                        strcmp(f[8], "median_us") == 0 &&
                        strcmp(f[17], "align") == 0 &&
                        strcmp(f[18], "loop") == 0 &&
                        strcmp(f[19], "dtype") == 0;
            continue;
        }
        if (n != 20) {
            fprintf(stderr, "bench test: CSV line %d has %d fields\n",
                    lines + 1, n);
            continue;
        }
        char *end;
        double med = strtod(f[8], &end);
        int ok = strcmp(f[0], "standalone") == 0 && *end == '\0' && med > 0 &&
                 strtod(f[7], NULL) <= med && med <= strtod(f[9], NULL) &&
                 strcmp(f[15], "ok") == 0 && atoi(f[3]) == 2 &&
                 /* the default: buffers where malloc put them */
                 strncmp(f[17], "malloc:", 7) == 0 &&
                 strcmp(f[18], "b2b") == 0 &&
                 /* no --dtype: uint32 sums, the column empty */
                 *f[19] == '\0' &&
                 (strcmp(f[2], "default") == 0 ||
                  strcmp(f[2], "tree=chain,frag=4k") == 0);
        if (strcmp(f[1], "barrier") == 0)
            ok = ok && atoi(f[4]) == 0 && *f[10] == '\0';
        else
            ok = ok && (atoi(f[4]) == 8 || atoi(f[4]) == 5000) &&
                 strtod(f[10], NULL) > 0;
        rows_ok += ok;
    }
    CU_ASSERT(header_ok);
    /* (2 sizes x bcast, reduce, allreduce + 1 barrier) x 2 configurations */
    CU_ASSERT_EQUAL(lines, 1 + 14);
    CU_ASSERT_EQUAL(rows_ok, 14);
    free(text);

    text = slurp(json);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT(json_ok(text));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"tool\": \"numacoll-bench\""));
    CU_ASSERT_EQUAL(count(text, "\"median_us\": "), 14);
    CU_ASSERT_EQUAL(count(text, "\"label\": "), 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "\"label\": \"tree=chain,frag=4k\""));
    free(text);
}

/* ---- verified runs --------------------------------------------------------- */

static void test_standalone_all_ops(void)
{
    /* p = 3 (not a power of two), sizes across the inline limits (191 for
     * Allreduce, 167 for Bcast), one Allreduce line (56) and the fragment
     * (8 KiB), rotating roots, cold and hot buffers */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 3 --ops all --sizes "
                        "4,56,60,167,168,191,192,8196,100000 --reps 2 "
                        "--iters 5"), 0);
    CU_ASSERT(contains("# bcast:"));
    CU_ASSERT(contains("# reduce:"));
    CU_ASSERT(contains("# allreduce:"));
    CU_ASSERT(contains("# barrier:"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* the gathers, Allgatherv among them: every block stamped, one call
     * per size checked byte for byte */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 3 --ops allgather,gather,"
                        "scatter,alltoall,allgatherv --sizes 1,100,70000 "
                        "--reps 2 --iters 3"), 0);
    CU_ASSERT(contains("# allgather:"));
    CU_ASSERT(contains("# allgatherv: allgather as an Allgatherv of equal "
                       "counts"));
    CU_ASSERT(contains("# alltoall:"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* every Allreduce algorithm by name, across its size limits */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 3 --ops allreduce --sizes "
                        "8,56,60,336,340,5000,100000 --reps 2 --iters 3 --compare "
                        "'inline reduce_bcast rsag'"), 0);
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* p = 3: the inline Scatter's and Alltoall's 2 blocks of up to 256
     * bytes (5 lines each) size the lines the Allreduce shares */
    CU_ASSERT(contains("inline: inline carries at most 10 lines of 56 bytes"));
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 2 --sizes 1,64k --reps 2 "
                        "--ops all --cache hot "
                        "--root-shift 0"), 0);
    CU_ASSERT(contains("fixed root 0"));
    /* every algorithm by name, and inline refusing what it cannot carry */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 2 --ops bcast --sizes "
                        "8,57,4096 --reps 2 --iters 3 --compare "
                        "'inline pipelined'"),
                    0);
    CU_ASSERT(contains("inline carries at most 167 bytes"));
    /* copy variants side by side, every one checked byte for byte */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 2 --ops bcast,allreduce "
                        "--sizes 8,40k,200k --reps 2 --iters 3 --compare "
                        "'copy=auto copy=libc copy=vec copy=nt copy=ntall "
                        "copy=adapt copy=ntadapt'"),
                    0);
    CU_ASSERT(contains("copy=ntadapt"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* a tuning file as one configuration's table, beside the built-in */
    char cmd[512], path[256];
    snprintf(path, sizeof path, "%s/dissem2.txt", scratch());
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("barrier p=1-* alg=dissem k=2\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "timeout 120 " BENCH " -p 3 --ops barrier "
             "--reps 2 --iters 3 --compare 'default table=%s'", path);
    CU_ASSERT_EQUAL(run(cmd), 0);
    CU_ASSERT(contains("table="));
    CU_ASSERT(contains("x default"));
}

/* The hierarchy in the header, levels through --param and --compare (its
 * names after levels= belong to it), and --transfers on a fake machine:
 * the three-level tree crosses fewer L3 domains than the NUMA one, and
 * with the relay its data does too. */
static void test_levels(void)
{
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 8 --ops bcast,barrier "
                        "--sizes 100 --reps 2 --iters 3 --topology "
                        "'synthetic:pack:2 numa:2 l3:4 core:4 pu:1' --param "
                        "tree=numa,levels=l3,numa,package"), 0);
    CU_ASSERT(contains("# hierarchy:     2 L3 > 8 ranks (levels "
                       "l3,numa,package; waits "));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 64 --transfers --sizes 1 "
                        "--topology 'synthetic:pack:2 numa:1 l3:8 core:4 "
                        "pu:1' --compare 'numa,levels=numa "
                        "numa,levels=l3,numa,package'"), 0);
    CU_ASSERT(contains("numa,levels=numa: 2 NUMA > 64 ranks"));
    CU_ASSERT(contains("numa,levels=l3,numa,package: 2 packages > 16 L3 > "
                       "64 ranks"));
    /* inline at 1 byte: one line per crossing edge, 15 = 16 L3 - 1 */
    CU_ASSERT(contains("|     15.0      1.0      1.0 |"));
    /* 1 MiB, pipelined in 32 fragments of 32 KiB: with the relay one copy
     * of its 16384 lines per L3 domain without the root (15) and one into
     * the other package, plus the notifications and bank lines; without
     * it 60 readers outside the root's L3 copy the root's */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 64 --transfers --sizes 1m "
                        "--topology 'synthetic:pack:2 numa:1 l3:8 core:4 "
                        "pu:1' --compare 'numa,levels=l3,numa,package "
                        "numa,levels=l3,numa,package,relay=1'"), 0);
    CU_ASSERT(contains("|    480.0     32.0     32.0 |   983992.5   524572.0"));
    CU_ASSERT(contains("|    480.0     32.0     32.0 |   246712.5    16668.0"));
    /* and the relay timed on that machine, data checked */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 8 --ops bcast --sizes "
                        "100,70000 --reps 2 --iters 3 --topology "
                        "'synthetic:pack:2 numa:2 l3:4 core:4 pu:1' --param "
                        "tree=numa,levels=l3,numa,package,relay=1"), 0);
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    CU_ASSERT_EQUAL(run(BENCH " -p 2 --param levels=l4"), 2);
    CU_ASSERT(contains("levels"));
}

static void test_check_catches(void)
{
    CU_ASSERT_EQUAL(run("NCB_FAULT=corrupt timeout 120 " BENCH " -p 2 --ops "
                        "bcast --sizes 100 --reps 2 --iters 3"), 1);
    CU_ASSERT(contains("CHECK FAILED"));
    CU_ASSERT(contains("received data was wrong"));
}

/* The ranks' teams are quiet, so the bench itself says, once, that a bad
 * $NUMACOLL_TUNING_FILE gave way to the built-in table, problem by problem
 * as file:line:col (tests/tune/bad-syntax.txt: line 2 is its first). */
static void test_rejected_tuning_file(void)
{
    CU_ASSERT_EQUAL(run("NUMACOLL_TUNING_FILE=tests/tune/bad-syntax.txt "
                        "timeout 120 " BENCH " -p 2 --ops bcast --sizes 8 "
                        "--reps 1 --iters 1 --quiet"), 0);
    CU_ASSERT(contains("numacoll: tuning file tests/tune/bad-syntax.txt "
                       "rejected ("));
    CU_ASSERT(contains("using the built-in table:\n"
                       "tests/tune/bad-syntax.txt:2:1: "));
    const char *first = strstr(out, "rejected (");
    CU_ASSERT(first && !strstr(first + 1, "rejected ("));
}

/* --dtype: names from the core, refused names listing the valid ones,
 * and short runs of a real and of a MINLOC pair whose checked calls pass
 * and whose spoiled ones fail. */
static void test_dtype(void)
{
    EXPECT_USAGE("--dtype nosuch", "--dtype: unknown type 'nosuch'");
    CU_ASSERT(contains("valid: int8, uint8"));
    CU_ASSERT(contains("double_int"));
    EXPECT_USAGE("--dtype double,double", "'double' is given twice");
    EXPECT_USAGE("--dtype long_double --align 8", "16-byte alignment");
    EXPECT_USAGE("--dtype double --overlap", "--overlap times uint32");
    char csv[160];
    snprintf(csv, sizeof csv, "%s/dt.csv", scratch());
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 3 --ops allreduce,reduce,"
                        "scan,exscan,reduce_scatter --sizes 4,100,70000 "
                        "--dtype double,2int,long_double --reps 2 --iters 3 "
                        "--csv %s", csv), 0);
    CU_ASSERT(contains("# allreduce double: double sum"));
    CU_ASSERT(contains("# reduce_scatter 2int: 2int minloc"));
    CU_ASSERT(contains("less than one 16-byte element"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    CU_ASSERT_EQUAL(run("grep -c ',long_double$' %s", csv), 0);
    CU_ASSERT(contains("15"));    /* 5 operations x 3 sizes */
    CU_ASSERT_EQUAL(run("NCB_FAULT=corrupt timeout 120 " BENCH " -p 2 --ops "
                        "allreduce --sizes 64 --dtype double --reps 2 "
                        "--iters 3"), 1);
    CU_ASSERT(contains("CHECK FAILED"));
    if (!have_mpi())
        return;
    CU_ASSERT_EQUAL(run(MPIRUN BENCH_MPI " --ops allreduce --sizes 64,4096 "
                        "--dtype double_precision,complex_double,float_int "
                        "--reps 2 --iters 3"), 0);
    CU_ASSERT(contains("# allreduce complex_double:"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
}

static void test_mpi_all_ops(void)
{
    if (!have_mpi())
        return;
    CU_ASSERT_EQUAL(run(MPIRUN BENCH_MPI " --ops all --sizes 4,60,8196,100000 "
                        "--reps 2 --iters 3"), 0);
    CU_ASSERT(contains("# numacoll-bench " ));
    CU_ASSERT(contains("# bcast:"));
    CU_ASSERT(contains("# reduce:"));
    CU_ASSERT(contains("# allreduce:"));
    CU_ASSERT(contains("# barrier:"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    CU_ASSERT_EQUAL(run("NCB_FAULT=corrupt " MPIRUN BENCH_MPI " --ops reduce "
                        "--sizes 64 --reps 2 --iters 3"), 1);
    CU_ASSERT(contains("CHECK FAILED"));
}

/* --overlap in both modes: every nonblocking operation checked and timed,
 * its CSV rows, and compare-ompi.sh --overlap's table. Timings are not
 * judged, only that every row is there and says ok. */
static void test_overlap(void)
{
    char csv[160];
    snprintf(csv, sizeof csv, "%s/ovl.csv", scratch());
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 3 --overlap --ops all "
                        "--sizes 4,8196,100000 --reps 2 --iters 2 --csv %s",
                        csv), 0);
    CU_ASSERT(contains("# ibcast, p = 3"));
    CU_ASSERT(contains("# ibarrier, p = 3"));
    CU_ASSERT(contains("overlap%"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* 3 sizes x 3 sized operations + the barrier, all ok */
    CU_ASSERT_EQUAL(run("grep -c ',ok,' %s", csv), 0);
    CU_ASSERT(contains("10"));
    CU_ASSERT_EQUAL(run(BENCH " --overlap --json x.json"), 2);
    CU_ASSERT(contains("--overlap prints its own table"));
    if (!have_mpi())
        return;
    CU_ASSERT_EQUAL(run(MPIRUN BENCH_MPI " --overlap --ops all --sizes "
                        "4,8196 --reps 2 --iters 2"), 0);
    CU_ASSERT(contains("# iallreduce, p = 2"));
    CU_ASSERT(!strstr(out, "CHECK FAILED"));
    /* libnbc against basic's (the same libnbc): the component need not
     * be built for the table to be checked */
    CU_ASSERT_EQUAL(run("OMPI_ALLOW_RUN_AS_ROOT=1 "
                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                        "ASAN_OPTIONS=detect_leaks=0 NC_BUILD=" NCT_BUILD_DIR
                        " timeout 300 bench/compare-ompi.sh --overlap -n 2 "
                        "-r 2 -c libnbc,basic -t 120 -o %s/ovc -- --sizes 8,4k "
                        "--reps 2 --iters 2", scratch()), 0);
    CU_ASSERT(contains("round 2/2"));
    CU_ASSERT(contains("x libnbc"));
    CU_ASSERT(contains("# ibcast"));
    CU_ASSERT(contains("# iallreduce"));
}

/* ---- --merge and compare-ompi.sh ------------------------------------------ */

static const char *const HDR =
    "mode,op,config,p,bytes,calls,samples,min_us,median_us,max_us,memcpy_us,"
    "line_rtt_us,barrier_us,cache,root_shift,status,note\n";

static void write_run_line(const char *name, const char *label, double med,
                           double memcpy_us, double line_us)
{
    char path[160];
    snprintf(path, sizeof path, "%s/%s", scratch(), name);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(HDR, f);
    fprintf(f, "mpi,bcast,%s,2,8,10,5,%.4f,%.4f,%.4f,0.0200,%.4f,0.2000,"
            "cold,1,ok,\n", label, med / 2, med, med * 2, line_us);
    fprintf(f, "mpi,bcast,%s,2,1048576,1,5,%.4f,%.4f,%.4f,%.4f,%.4f,0.2000,"
            "cold,1,ok,\n", label, med * 50, med * 100, med * 200, memcpy_us,
            line_us);
    fclose(f);
}

static void write_run(const char *name, const char *label, double med,
                      double memcpy_us)
{
    write_run_line(name, label, med, memcpy_us, 0.12);
}

static void test_merge(void)
{
    /* three rounds of A = numacoll and B = tuned: medians of medians are
     * 2.0 and 4.0, memcpy's median 50 */
    write_run("a1.csv", "numacoll", 1.0, 40);
    write_run("a2.csv", "numacoll", 3.0, 50);
    write_run("a3.csv", "numacoll", 2.0, 60);
    write_run("b1.csv", "tuned", 4.0, 50);
    write_run("b2.csv", "tuned", 4.5, 50);
    write_run("b3.csv", "tuned", 3.5, 50);
    const char *d = scratch();
    CU_ASSERT_EQUAL(run("timeout 30 " BENCH " --merge --baseline tuned --csv "
                        "%s/merged.csv %s/a1.csv %s/a2.csv %s/a3.csv "
                        "%s/b1.csv %s/b2.csv %s/b3.csv", d, d, d, d, d, d, d),
                    0);
    /* bytes, memcpy, numacoll median, x tuned, x lim, tuned median, x lim */
    CU_ASSERT(contains("          8      0.020      2.000    0.50"));
    CU_ASSERT(contains("    1048576      50.00     200.00    0.50    4.00"));
    CU_ASSERT(contains("merged: 6 runs"));
    char path[160];
    snprintf(path, sizeof path, "%s/merged.csv", tmpdir);
    char *text = slurp(path);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "bcast,numacoll,2,8,10,15,0.5000,"
                                        "2.0000,6.0000"));
    free(text);
    CU_ASSERT(!strstr(out, "groups"));
    /* runs on two machine states: the comparison is repeated per state,
     * each configuration against runs of the same state */
    write_run_line("c1.csv", "numacoll", 1.0, 50, 0.12);
    write_run_line("c2.csv", "numacoll", 9.0, 50, 0.53);
    write_run_line("d1.csv", "tuned", 2.0, 50, 0.12);
    write_run_line("d2.csv", "tuned", 10.0, 50, 0.53);
    CU_ASSERT_EQUAL(run("timeout 30 " BENCH " --merge --baseline tuned "
                        "%s/c1.csv %s/c2.csv %s/d1.csv %s/d2.csv", d, d, d, d),
                    0);
    CU_ASSERT(contains("fall into 2 groups"));
    CU_ASSERT(contains("2 of 4 runs with a line round trip of 0.120 to 0.120"));
    CU_ASSERT(contains("2 of 4 runs with a line round trip of 0.530 to 0.530"));
    /* close: 1.0 vs 2.0; far: 9.0 vs 10.0 */
    CU_ASSERT(contains("          8      0.020      1.000    0.50"));
    CU_ASSERT(contains("          8      0.020      9.000    0.90"));
    /* a file that is not ours is refused with its name and line */
    snprintf(path, sizeof path, "%s/bad.csv", tmpdir);
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(HDR, f);
    fputs("mpi,bcast,x,2\n", f);
    fclose(f);
    CU_ASSERT_EQUAL(run("timeout 30 " BENCH " --merge %s", path), 2);
    CU_ASSERT(contains("bad.csv:2: expected 17 fields, found 4"));
}

static void test_compare_script(void)
{
    if (!have_mpi())
        return;
    CU_ASSERT_EQUAL(run("OMPI_ALLOW_RUN_AS_ROOT=1 "
                        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                        "ASAN_OPTIONS=detect_leaks=0 NC_BUILD=" NCT_BUILD_DIR
                        " timeout 300 bench/compare-ompi.sh -n 2 -r 2 -c "
                        "tuned,basic -t 120 -o %s/cmp -- --ops bcast "
                        "--sizes 8,4k --reps 2 --iters 3", scratch()), 0);
    CU_ASSERT(contains("round 2/2"));
    CU_ASSERT(contains("merged: 4 runs"));
    CU_ASSERT(contains("tuned   x lim      basic x tuned"));
    CU_ASSERT(contains("\n          8 "));
    CU_ASSERT(contains("\n       4096 "));
    CU_ASSERT_EQUAL(run("NC_BUILD=" NCT_BUILD_DIR " bench/compare-ompi.sh "
                        "-c nosuch"), 2);
    CU_ASSERT(contains("unknown configuration 'nosuch'"));
    CU_ASSERT_EQUAL(run("bench/compare-ompi.sh -r -1"), 2);
    CU_ASSERT(contains("'-1' is not a positive count"));
}

static void test_plot(void)
{
    char png[128];
    snprintf(png, sizeof png, "%s/p.png", scratch());
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " -p 2 --ops bcast --sizes 8,4k "
                        "--reps 2 --iters 3 --quiet --plot %s", png), 0);
    if (run("command -v gnuplot") != 0) {
        printf("  (gnuplot missing: plot not drawn) ");
        return;
    }
    FILE *f = fopen(png, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    unsigned char sig[8] = {0};
    CU_ASSERT_EQUAL(fread(sig, 1, 8, f), 8);
    fclose(f);
    CU_ASSERT(memcmp(sig, "\x89PNG\r\n\x1a\n", 8) == 0);
}

static unsigned long long shm_used_now(void)
{
    struct statvfs sv;
    if (statvfs("/dev/shm", &sv) != 0)
        return 0;
    return (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

/* --footprint: a row per p with the grown size, /dev/shm agreeing; a
 * budget that holds no staging says so */
static void test_footprint(void)
{
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " --footprint -p 3"), 0);
    CU_ASSERT(contains("ctrl/rank") && contains("team grown"));
    /* p, then the row: ctrl, header, team, shm (equal to the team) */
    unsigned p = 0;
    double ctrl = 0, head = 0, team = -1, shm = -2, st = 0, grown = 0,
           sgrown = -1;
    const char *row = strstr(out, "\n    3 ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL(sscanf(row, "%u %lf %lf %lf %lf %lf %lf %lf", &p, &ctrl,
                           &head, &team, &shm, &st, &grown, &sgrown), 8);
    CU_ASSERT(ctrl > 0 && team == 3 * ctrl + head && shm == team);
    CU_ASSERT(grown == team + 3 * st && sgrown == grown);
    /* a node budget that holds the control pages only */
    CU_ASSERT_EQUAL(run("timeout 120 " BENCH " --footprint -p 2 --param "
                        "node_budget=%llu",
                        (unsigned long long)shm_used_now() + 512 * 1024), 0);
    CU_ASSERT(contains("no room") && contains("node_budget"));
}

int nct_register_bench(void)
{
    static const nct_test_t tests[] = {
        {"arguments: messages and exit status 2", test_args},
        {"the JSON reader of these tests", test_json_reader},
        {"CSV and JSON parse back", test_csv_json},
        {"standalone: every operation, data verified", test_standalone_all_ops},
        {"levels: header, --param, --compare, --transfers", test_levels},
        {"a spoiled transfer fails the check", test_check_catches},
        {"a rejected tuning file is said once", test_rejected_tuning_file},
        {"--dtype: names, errors, checked runs", test_dtype},
        {"MPI: every operation, data verified", test_mpi_all_ops},
        {"--merge: medians of medians, bad files", test_merge},
        {"compare-ompi.sh: table of two configurations", test_compare_script},
        {"--plot writes a PNG", test_plot},
        {"--overlap: both modes, compare-ompi.sh --overlap", test_overlap},
        {"--footprint: sizes agree with /dev/shm; no room said", test_footprint},
        {NULL, NULL}};
    return nct_add_suite("bench", tests);
}

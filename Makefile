# numacoll — plain Makefile. `make` builds the libraries and programs,
# `make check` runs the CUnit suites, `make bench` runs the main job.
# SANITIZE=1 builds everything under -fsanitize=address,undefined in build-san/.

PREFIX  ?= /usr/local
CC      ?= cc
DEB_PKGS = libhwloc-dev libnuma-dev libcunit1-dev hwloc pkg-config make gcc \
           libopenmpi-dev openmpi-bin gnuplot-nox

ifeq ($(SANITIZE),1)
BUILD   ?= build-san
SANFLAGS = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
OPT      = -O1
else
BUILD   ?= build
SANFLAGS =
OPT      = -O2
endif

PKG_CFLAGS := $(shell pkg-config --cflags hwloc numa 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs hwloc numa 2>/dev/null)
CUNIT_LIBS := $(shell pkg-config --libs cunit 2>/dev/null)

CFLAGS  ?= $(OPT) -g
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC -pthread $(SANFLAGS)
CPPFLAGS += -Iinclude -I. $(PKG_CFLAGS)
LDLIBS  += $(PKG_LIBS) -lrt -lm -pthread
LDFLAGS += $(SANFLAGS)

# The library: one list of sources.
LIB_SRCS = \
	coll/status.c \
	coll/algs.c \
	coll/config.c \
	coll/wait.c \
	coll/copy.c \
	coll/call.c \
	coll/tree.c \
	coll/team.c \
	coll/runner.c \
	coll/barrier.c \
	coll/bcast/bcast_pipelined.c \
	coll/bcast/bcast_inline.c \
	coll/bcast/bcast_cma.c \
	coll/reduce/ops.c \
	coll/reduce/dispatch.c \
	coll/reduce/reduce_pipelined.c \
	coll/reduce/allreduce_inline.c \
	coll/reduce/allreduce_reduce_bcast.c \
	coll/reduce/allreduce_rsag.c \
	topo/topo.c \
	topo/groups.c \
	shm_seg/layout.c \
	shm_seg/seg.c \
	shm_seg/pool.c \
	tune/table.c \
	tune/model.c

TEST_SRCS = \
	tests/run_tests.c \
	tests/test_util.c \
	tests/test_config.c \
	tests/test_tree.c \
	tests/test_topo.c \
	tests/test_layout.c \
	tests/test_runner.c \
	tests/test_bcast.c \
	tests/test_seg.c \
	tests/test_reduce.c \
	tests/test_bench.c \
	tests/test_tune.c \
	tests/test_tune_team.c \
	tests/test_tune_file.c \
	tests/test_topo_cache.c \
	tests/test_model.c \
	tests/test_copy.c \
	tests/test_align.c \
	tests/test_mismatch.c

# numacoll-bench (standalone); bench/bench.mk builds the MPI twin.
BENCH_SRCS = \
	bench/numacoll-bench.c \
	bench/bench_opts.c \
	bench/bench_core.c \
	bench/bench_report.c \
	bench/bench_team.c

# The built-in tuning table, tune/defaults.txt, compiled in as a string
# (tune/tune.mk generates its .c).
LIB_OBJS  = $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/tune/defaults_txt.o
# The op kernels: GCC 12 at -O2 vectorises only loops whose trip count is a
# known multiple of the vector length, so they get -O3 (see ops.c).
$(BUILD)/coll/reduce/ops.o: CFLAGS += -O3
TEST_OBJS = $(TEST_SRCS:%.c=$(BUILD)/%.o)
BENCH_OBJS = $(BENCH_SRCS:%.c=$(BUILD)/%.o)
DEPS      = $(LIB_OBJS:.o=.d) $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d)

STATIC = $(BUILD)/libnumacoll.a
SHARED = $(BUILD)/libnumacoll.so
TESTS  = $(BUILD)/tests/run_tests
BENCH  = $(BUILD)/numacoll-bench

.PHONY: all check bench install clean deps deps-check
all: deps-check $(STATIC) $(SHARED) $(BENCH)

# Fail early with the one command that installs what is missing.
deps-check:
	@missing=""; \
	for p in hwloc numa cunit; do pkg-config --exists $$p 2>/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "numacoll: missing development packages ($$missing )."; \
	  echo "Install them with: make deps   (runs: apt-get install -y $(DEB_PKGS))"; \
	  exit 2; \
	fi

deps:
	@if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $(DEB_PKGS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

$(SHARED): $(LIB_OBJS)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,libnumacoll.so -o $@ $^ $(LDLIBS)

$(TESTS): $(TEST_OBJS) $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJS) $(STATIC) $(CUNIT_LIBS) $(LDLIBS)

$(BENCH): $(BENCH_OBJS) $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The CUnit suites, then (plain builds, with Open MPI installed) the MPI
# tests of the Open MPI component; ompi/ompi.mk says why when it skips.
# The tune suites load a table a --quick autotuner run wrote just before
# (numacoll-tune, tune/tuner.mk), so that the tuner's output is checked too.
check: deps-check $(TESTS) $(BUILD)/numacoll-tune
	$(BUILD)/numacoll-tune --quick -o $(BUILD)/tuned-quick.txt
	NCT_TUNED_TABLE=$(BUILD)/tuned-quick.txt $(TESTS)
ifneq ($(SANITIZE),1)
	$(MAKE) --no-print-directory check-mpi
endif

install: $(STATIC) $(SHARED) $(BENCH)
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/numacoll.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(BENCH) $(DESTDIR)$(PREFIX)/bin/

clean:
	rm -rf build build-san

# `make bench` (the main job), the MPI build of the benchmark, plots.
include bench/bench.mk

# The tuning table's generated defaults, `make fuzz`, numacoll-tune.
include tune/tune.mk
include tune/tuner.mk

# The Open MPI coll component (mca_coll_numacoll.so) and its MPI tests.
include ompi/ompi.mk
all: ompi

-include $(DEPS)

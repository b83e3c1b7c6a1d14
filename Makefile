# numacoll — plain Makefile. `make` builds the libraries and programs,
# `make check` runs the CUnit suites, `make bench` runs the main job.
# SANITIZE=1 builds everything under -fsanitize=address,undefined in build-san/.

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
CC      ?= cc
# The Debian packages the build, the tests and the benchmark use: one list,
# deps.txt, which ./make.sh installs too.
DEB_PKGS := $(strip $(shell sed 's/#.*//' deps.txt))

# The release, read from the public header so that it is written once;
# SOVERSION is the ABI's, raised when a binary linked against the previous
# libnumacoll.so.$(SOVERSION) could break (include/numacoll.map).
nc_hdr_num = $(shell sed -n 's/^#define NUMACOLL_VERSION_$(1) *//p' include/numacoll.h)
VERSION   := $(call nc_hdr_num,MAJOR).$(call nc_hdr_num,MINOR).$(call nc_hdr_num,PATCH)
SOVERSION  = 0

# `make bench` and `make check` first install the packages of deps.txt that
# are missing (./make.sh --deps-only: apt-get as root, else through sudo,
# else it prints the command and fails), before the pkg-config and mpicc
# probes below run. No other goal runs apt-get (a package build's `make
# install` must not), nor does `make -n`.
ifneq ($(filter bench check,$(MAKECMDGOALS)),)
ifeq ($(NC_DEPS_DONE)$(findstring n,$(firstword -$(MAKEFLAGS))),)
NC_DEPS_RC := $(shell bash make.sh --deps-only >&2; echo $$?)
$(if $(filter 0,$(NC_DEPS_RC)),,$(error numacoll: the packages above are missing))
export NC_DEPS_DONE := 1
endif
endif

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

# The library: one list of sources. Library code only: what the programs
# share besides it is in support/ (the forked runner) and tools/.
LIB_SRCS = \
	coll/status.c \
	coll/algs.c \
	coll/config.c \
	coll/wait.c \
	coll/wake.c \
	coll/grow.c \
	coll/copy.c \
	coll/cma.c \
	coll/call.c \
	coll/tree.c \
	coll/team_info.c \
	coll/team.c \
	coll/barrier.c \
	coll/request.c \
	coll/bcast/bcast.c \
	coll/bcast/bcast_pipelined.c \
	coll/bcast/bcast_inline.c \
	coll/bcast/bcast_cma.c \
	coll/reduce/ops.c \
	coll/reduce/dispatch.c \
	coll/reduce/reduce_pipelined.c \
	coll/reduce/allreduce_inline.c \
	coll/reduce/allreduce_reduce_bcast.c \
	coll/reduce/allreduce_rsag.c \
	coll/reduce/allreduce_allfold.c \
	coll/reduce/reduce_scatter.c \
	coll/reduce/scan.c \
	coll/reduce/rscan_inline.c \
	coll/gather/staged.c \
	coll/gather/allgather_inline.c \
	coll/gather/rooted_inline.c \
	coll/gather/alltoall_inline.c \
	coll/gather/allgather_staged.c \
	coll/gather/gather_staged.c \
	coll/gather/scatter_staged.c \
	coll/gather/alltoall_staged.c \
	coll/gather/gather_cma.c \
	topo/topo.c \
	topo/groups.c \
	shm_seg/layout.c \
	shm_seg/seg.c \
	shm_seg/pool.c \
	tune/table.c

# Outside the library, under it: the forked runner of the tests,
# numacoll-bench and numacoll-tune; the autotuner's performance model,
# which the tests check too (tools/tune/tuner.mk builds the tuner).
SUPPORT_SRCS = support/runner.c
MODEL_SRCS   = tools/tune/model.c

TEST_SRCS = \
	tests/run_tests.c \
	tests/test_util.c \
	tests/test_config.c \
	tests/test_tree.c \
	tests/test_topo.c \
	tests/test_layout.c \
	tests/test_runner.c \
	tests/test_bcast.c \
	tests/test_inline.c \
	tests/test_seg.c \
	tests/test_grow.c \
	tests/test_reduce.c \
	tests/test_bench.c \
	tests/test_tune.c \
	tests/test_tune_team.c \
	tests/test_tune_file.c \
	tests/test_tune_levels.c \
	tests/test_tune_tuner.c \
	tests/test_tune_decline.c \
	tests/test_topo_cache.c \
	tests/test_model.c \
	tests/test_copy.c \
	tests/test_align.c \
	tests/test_mismatch.c \
	tests/test_mismatch_sweep.c \
	tests/test_levels.c \
	tests/test_request.c \
	tests/test_gather.c \
	tests/test_packed.c \
	tests/test_rscan.c \
	tests/test_wait.c

# numacoll-bench (standalone); bench/bench.mk builds the MPI twin.
BENCH_SRCS = \
	bench/numacoll-bench.c \
	bench/bench_opts.c \
	bench/bench_core.c \
	bench/bench_report.c \
	bench/bench_team.c \
	bench/bench_transfers.c \
	bench/bench_overlap.c \
	bench/bench_dtype.c \
	bench/bench_footprint.c

# The built-in tuning table, tune/defaults.txt, compiled in as a string
# (tune/tune.mk generates its .c).
LIB_OBJS  = $(LIB_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/tune/defaults_txt.o
# The op kernels: GCC 12 at -O2 vectorises only loops whose trip count is a
# known multiple of the vector length, so they get -O3 (see ops.c).
$(BUILD)/coll/reduce/ops.o: CFLAGS += -O3
# Nothing of the library is visible outside libnumacoll.so but what
# include/numacoll.h marks NUMACOLL_API (and include/numacoll.map names).
$(LIB_OBJS): CFLAGS += -fvisibility=hidden
SUPPORT_OBJS = $(SUPPORT_SRCS:%.c=$(BUILD)/%.o)
MODEL_OBJS   = $(MODEL_SRCS:%.c=$(BUILD)/%.o)
TEST_OBJS = $(TEST_SRCS:%.c=$(BUILD)/%.o)
BENCH_OBJS = $(BENCH_SRCS:%.c=$(BUILD)/%.o)
DEPS      = $(LIB_OBJS:.o=.d) $(SUPPORT_OBJS:.o=.d) $(MODEL_OBJS:.o=.d) \
            $(TEST_OBJS:.o=.d) $(BENCH_OBJS:.o=.d)

# The tests and the programs link the static library: they use its
# internal nc__ functions, which the shared one does not export.
STATIC = $(BUILD)/libnumacoll.a
SONAME = libnumacoll.so.$(SOVERSION)
SHARED_REAL = $(BUILD)/libnumacoll.so.$(VERSION)
SHARED = $(BUILD)/libnumacoll.so
LIB_MAP = include/numacoll.map
TESTS  = $(BUILD)/tests/run_tests
BENCH  = $(BUILD)/numacoll-bench

.PHONY: all check bench install clean deps deps-check deps-check-test
all: deps-check $(STATIC) $(SHARED) $(BENCH) $(BUILD)/numacoll.pc

# Goals other than bench and check do not install packages (see the top):
# they stop early with the command that would.
nc_deps_missing = missing=""; \
	for p in $(1); do pkg-config --exists $$p 2>/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "numacoll: missing development packages ($$missing )."; \
	  echo "Install them with: ./make.sh --deps-only   (apt-get install -y $(DEB_PKGS))"; \
	  exit 2; \
	fi
deps-check:
	@$(call nc_deps_missing,hwloc numa)
deps-check-test:
	@$(call nc_deps_missing,hwloc numa cunit)

deps:
	@bash make.sh --deps-only

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJS)
	rm -f $@
	ar rcs $@ $^

# libnumacoll.so.$(VERSION), named $(SONAME) inside; -z defs proves it
# names every library it needs. The two links are what ldconfig and the
# -dev package make on an installed system.
$(SHARED_REAL): $(LIB_OBJS) $(LIB_MAP)
	$(CC) -shared $(LDFLAGS) -Wl,-soname,$(SONAME) \
	  -Wl,--version-script=$(LIB_MAP) -Wl,-z,defs -o $@ $(LIB_OBJS) $(LDLIBS)
$(SHARED): $(SHARED_REAL)
	ln -sf $(notdir $<) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# The tests link the autotuner's candidates and table code too (its
# TUNER_CORE_OBJS, with the benchmark's objects they use: tools/tune/tuner.mk
# adds them as prerequisites).
$(TESTS): $(TEST_OBJS) $(SUPPORT_OBJS) $(MODEL_OBJS) $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $(TEST_OBJS) $(SUPPORT_OBJS) $(MODEL_OBJS) \
	  $(TUNER_CORE_OBJS) $(TUNER_BENCH_OBJS) $(STATIC) $(CUNIT_LIBS) \
	  $(LDLIBS)

$(BENCH): $(BENCH_OBJS) $(SUPPORT_OBJS) $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The CUnit suites, then (plain builds, with Open MPI installed) the MPI
# tests of the Open MPI component; ompi/ompi.mk says why when it skips.
# The tune suites load a table a --quick autotuner run wrote just before
# (numacoll-tune, tools/tune/tuner.mk), so that the tuner's output is
# checked too. Plain builds then install into $(BUILD)/install-check and
# build a program against that (check-install).
check: deps-check-test $(TESTS) $(BUILD)/numacoll-tune
	sh tests/layers.sh $(BUILD)
	$(BUILD)/numacoll-tune --quick -o $(BUILD)/tuned-quick.txt
	NCT_TUNED_TABLE=$(BUILD)/tuned-quick.txt $(TESTS)
ifneq ($(SANITIZE),1)
	$(MAKE) --no-print-directory check-install
	$(MAKE) --no-print-directory check-mpi
	$(MAKE) --no-print-directory check-mpich
endif

# numacoll.pc for the prefix and libdir of this make run: rewritten only
# when they change, so that `make install PREFIX=...` after `make` gets
# its own.
nc_pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
.PHONY: FORCE
$(BUILD)/numacoll.pc: FORCE
	@mkdir -p $(dir $@)
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(call nc_pc_dir,$(LIBDIR))' \
	  'includedir=$(call nc_pc_dir,$(INCLUDEDIR))' '' 'Name: numacoll' \
	  'Description: collective operations for processes sharing one NUMA machine' \
	  'Version: $(VERSION)' 'Requires.private: hwloc numa' \
	  'Libs: -L$${libdir} -lnumacoll' 'Libs.private: -lrt -lm -pthread' \
	  'Cflags: -I$${includedir}' > $@.tmp
	@if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

# Library, header, pkg-config file and numacoll-bench; the .mk files below
# add numacoll-bench-mpi, numacoll-tune, the man pages and the Open MPI
# component. Never runs tests or apt-get; needs no root with DESTDIR.
install: $(STATIC) $(SHARED) $(BENCH) $(BUILD)/numacoll.pc
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
	  $(DESTDIR)$(BINDIR)
	install -m 644 include/numacoll.h $(DESTDIR)$(INCLUDEDIR)/
	install -m 644 $(STATIC) $(SHARED_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(SHARED_REAL)) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libnumacoll.so
	install -m 644 $(BUILD)/numacoll.pc $(DESTDIR)$(LIBDIR)/pkgconfig/
	install -m 755 $(BENCH) $(DESTDIR)$(BINDIR)/

# What a user of the installed library sees: an install into a fresh
# prefix, whose libnumacoll.so exports numacoll_* only, and a program that
# includes <numacoll.h> and links with `pkg-config --cflags --libs
# numacoll` alone, run against that install's libnumacoll.so.0.
NC_ICHECK = $(abspath $(BUILD))/install-check
.PHONY: check-install
check-install:
	rm -rf $(NC_ICHECK)
	$(MAKE) --no-print-directory install BUILD=$(BUILD) PREFIX=$(NC_ICHECK) \
	  OMPI_COMPONENT_DIR=$(NC_ICHECK)/lib/openmpi >/dev/null
	@extra=$$(nm -D --defined-only $(NC_ICHECK)/lib/$(SONAME) | \
	  awk '$$3 !~ /^numacoll_/ && $$3 != "NUMACOLL_$(SOVERSION)" {print $$3}'); \
	if [ -n "$$extra" ]; then echo "numacoll: $(SONAME) exports more than numacoll_*:" $$extra; exit 1; fi
	$(CC) -std=c11 -Wall -Wextra -Werror -o $(NC_ICHECK)/use_installed \
	  tests/install/use_installed.c \
	  $$(PKG_CONFIG_PATH=$(NC_ICHECK)/lib/pkgconfig pkg-config --cflags --libs numacoll)
	@readelf -d $(NC_ICHECK)/use_installed | grep -q 'NEEDED.*\[$(SONAME)\]' || \
	  { echo "numacoll: use_installed does not load $(SONAME)"; exit 1; }
	LD_LIBRARY_PATH=$(NC_ICHECK)/lib $(NC_ICHECK)/use_installed

clean:
	rm -rf build build-san

# `make bench` (the main job), the MPI build of the benchmark, plots.
include bench/bench.mk

# The tuning table's generated defaults, `make fuzz`, numacoll-tune.
include tune/tune.mk
include tools/tune/tuner.mk

# numacoll-bench.1 and numacoll-tune.1, from the programs' --help.
include man/man.mk

# The Open MPI coll component (mca_coll_numacoll.so) and its MPI tests.
include ompi/ompi.mk
all: ompi

# libnumacoll-mpi: numacoll under MPICH (and any MPI) through PMPI
include mpi/mpi.mk

# make deb: the Debian packages (debian/deb.mk).
include debian/deb.mk

-include $(DEPS)

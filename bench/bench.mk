# bench/bench.mk -- included by the Makefile after its own rules; uses its
# BUILD, CFLAGS, LDFLAGS, BENCH, STATIC, BINDIR and DESTDIR.
#
#   $(BUILD)/numacoll-bench-mpi  the benchmark's MPI twin (mpicc -DNCB_BUILD_MPI),
#                                part of `make` when mpicc exists, skipped
#                                with a one-line note otherwise
#   $(BUILD)/comm-cost           time and memory per new communicator (mpicc;
#                                bench/comm-cost.sh)
#   make bench                   the main job: a short standalone comparison
#                                (the default tree against the others, with
#                                the memcpy limit) and, with Open MPI,
#                                bench/compare-ompi.sh at np = 2; tables on
#                                the terminal, CSV/JSON/PNG in $(NCB_OUT)
#   make install                 installs numacoll-bench-mpi, when built,
#                                next to numacoll-bench
#
# Neither Open MPI nor gnuplot is needed for `make` or `make check`.

NCB_MPICC ?= mpicc
NCB_MPI    = $(BUILD)/numacoll-bench-mpi
NCB_MPI_SRCS = bench/numacoll-bench.c bench/bench_opts.c bench/bench_core.c \
               bench/bench_report.c bench/bench_mpi.c bench/bench_overlap.c \
               bench/bench_dtype.c
NCB_OUT   ?= $(BUILD)/bench-results
NCB_HAVE_MPICC := $(shell command -v $(NCB_MPICC) 2>/dev/null)

# The standalone comparison of `make bench`: every tree at the default
# parameters, for the operations the tree serves (Reduce and Allreduce have
# their own trees: --ops all measures them), 5 interleaved samples per size
# (a short run; see docs/bench.md for a careful one).
NCB_SA_ARGS ?= --ops bcast,barrier --reps 5 --compare 'default knomial flat chain numa'
# compare-ompi.sh in `make bench`: np 2, four interleaved rounds (A B C D,
# D C B A, ...), enough for a median per machine state (docs/bench.md).
NCB_OMPI_ARGS ?= -n 2 -r 4

.PHONY: bench ncb-mpi-skip

ifneq ($(NCB_HAVE_MPICC),)
NCB_MPI_GOAL = $(NCB_MPI)
# One compile and link: the MPI twin does not use libnumacoll (it measures
# whatever Open MPI selected), so it needs neither hwloc nor libnuma.
$(NCB_MPI): $(NCB_MPI_SRCS) bench/bench.h
	@mkdir -p $(dir $@)
	$(NCB_MPICC) $(CPPFLAGS) $(CFLAGS) -DNCB_BUILD_MPI -I. $(LDFLAGS) -o $@ $(NCB_MPI_SRCS)
else
NCB_MPI_GOAL = ncb-mpi-skip
ncb-mpi-skip:
	@echo "numacoll: mpicc not found; numacoll-bench-mpi skipped (Debian: apt-get install libopenmpi-dev openmpi-bin)"
endif

# comm-cost (bench/comm_cost.c): what a new communicator costs in time and
# memory under the selected coll component; bench/comm-cost.sh runs it with
# and without numacoll (docs/bench.md, "Communicator cost"). Plain MPI.
NCB_COMM_COST = $(BUILD)/comm-cost
ifneq ($(NCB_HAVE_MPICC),)
NCB_COMM_COST_GOAL = $(NCB_COMM_COST)
$(NCB_COMM_COST): bench/comm_cost.c
	@mkdir -p $(dir $@)
	$(NCB_MPICC) $(CFLAGS) $(LDFLAGS) -o $@ $<
else
NCB_COMM_COST_GOAL = ncb-mpi-skip
endif

all: $(NCB_MPI_GOAL) $(NCB_COMM_COST_GOAL)

# An extra prerequisite of the Makefile's install.
.PHONY: install-bench-mpi
install: install-bench-mpi
install-bench-mpi: $(NCB_MPI_GOAL)
ifneq ($(NCB_HAVE_MPICC),)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(NCB_MPI) $(DESTDIR)$(BINDIR)/
endif
# the bench suite runs both programs, from the build folder being tested
check: $(BENCH) $(NCB_MPI_GOAL)
$(BUILD)/tests/test_bench.o: CPPFLAGS += -DNCT_BUILD_DIR='"$(BUILD)"'

bench: all
	@mkdir -p $(NCB_OUT)
	@echo "== numacoll-bench, standalone: the default tree against the others =="
	@if command -v gnuplot >/dev/null 2>&1; then plot="--plot $(NCB_OUT)/standalone.png"; \
	else plot=""; echo "numacoll: gnuplot not installed; no PNG (install: make deps)"; fi; \
	echo "$(BENCH) $(NCB_SA_ARGS) --csv $(NCB_OUT)/standalone.csv --json $(NCB_OUT)/standalone.json $$plot"; \
	$(BENCH) $(NCB_SA_ARGS) --csv $(NCB_OUT)/standalone.csv \
	  --json $(NCB_OUT)/standalone.json $$plot
	@if ! command -v mpirun >/dev/null 2>&1 || [ ! -x $(NCB_MPI) ]; then \
	  echo "numacoll: Open MPI (mpirun, mpicc) not installed; compare-ompi.sh skipped (install: make deps)"; \
	  exit 0; \
	fi; \
	if $(MAKE) -n ompi >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory ompi || echo "numacoll: 'make ompi' failed; comparing without the numacoll component"; \
	fi; \
	echo "== numacoll-bench-mpi under Open MPI: numacoll, tuned, sm, han =="; \
	plot=""; command -v gnuplot >/dev/null 2>&1 && plot="--plot $(NCB_OUT)/ompi.png"; \
	NC_BUILD=$(BUILD) bench/compare-ompi.sh $(NCB_OMPI_ARGS) -o $(NCB_OUT)/ompi $$plot
	@echo "numacoll: the same comparison under Open MPI 5.0 (a Debian trixie chroot, as root): tests/ompi5/run.sh --bench $(NCB_OMPI_ARGS) (docs/ompi.md)"

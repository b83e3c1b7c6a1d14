# mpi/mpi.mk -- libnumacoll-mpi, numacoll under any MPI through the
# profiling interface (docs/mpich.md), built for each MPI whose compiler
# wrapper is installed, and the MPI test programs built for MPICH; included
# by the main Makefile after LIB_OBJS.
#
#   make mpi-lib        $(BUILD)/mpich/libnumacoll-mpi.so (mpicc.mpich) and
#                       $(BUILD)/openmpi/libnumacoll-mpi.so (mpicc.openmpi),
#                       each where its wrapper exists; part of `make`
#   make check-mpich    tests/mpi/run-pmpi.sh: the MPI tests under MPICH
#                       with and without the library, and under Open MPI
#                       with it
#   make install-mpi-lib  installs them as $(LIBDIR)/numacoll/<mpi>/libnumacoll-mpi.so
#                       (not part of `make install`: no Debian package holds them yet)
#
# Without an MPI these print why and do nothing; the core never needs one.

nm_saved_goal := $(.DEFAULT_GOAL)

NM_SRCS  = mpi/nm_comm.c mpi/nm_types.c mpi/nm_map.c mpi/nm_coll.c \
           mpi/nm_vcoll.c mpi/nm_nb.c
NM_MAP   = mpi/libnumacoll-mpi.map
# <name>:<compiler wrapper> of each MPI the library is built for
NM_MPIS ?= mpich:mpicc.mpich openmpi:mpicc.openmpi
nm_have = $(shell command -v $(1) 2>/dev/null)
NM_BUILT := $(foreach m,$(NM_MPIS),$(if $(call nm_have,$(word 2,$(subst :, ,$(m)))),$(firstword $(subst :, ,$(m)))))
NM_LIBS  := $(NM_BUILT:%=$(BUILD)/%/libnumacoll-mpi.so)
nm_cc = $(word 2,$(subst :, ,$(filter $(1):%,$(NM_MPIS))))

# The MPI test programs for MPICH (tests/mpi/run-pmpi.sh); those that test
# Open MPI's component itself (its parameters, MPI_T variables, two-level
# mode, recovery) are left out.
NM_TESTS = bcast_types bcast_derived derived_types barrier_order many_comms \
           reduce_ops reduce_types nonblocking gathers rscan threads
NM_TEST_BINS = $(if $(filter mpich,$(NM_BUILT)),$(NM_TESTS:%=$(BUILD)/mpich/tests/%))
# fortran_reduce where mpifort.mpich has its compiler (deps.txt: gfortran)
NM_FC := $(if $(filter mpich,$(NM_BUILT)),$(call nm_have,$(firstword $(shell mpifort.mpich -show 2>/dev/null))))
NM_TEST_BINS += $(if $(NM_FC),$(BUILD)/mpich/tests/fortran_reduce)

.PHONY: mpi-lib check-mpich install-mpi-lib
mpi-lib: $(NM_LIBS) $(NM_TEST_BINS)
	$(if $(NM_BUILT),,@echo "numacoll: no mpicc.mpich or mpicc.openmpi; libnumacoll-mpi not built (Debian: apt-get install libmpich-dev)")
all: mpi-lib

# One object folder per MPI: the objects depend on its mpi.h. Default
# visibility (mpi.h marks nothing): the map exports MPI_* alone.
define nm_lib_rules
$(BUILD)/$(1)/mpi/%.o: mpi/%.c mpi/nm.h mpi/nm_map.h include/numacoll.h
	@mkdir -p $$(dir $$@)
	$(call nm_cc,$(1)) $$(CPPFLAGS) $$(CFLAGS) -c -o $$@ $$<

# The core's objects are linked in whole, so the library needs only the MPI
# at load time (-z defs proves it) and one LD_PRELOAD is enough.
$(BUILD)/$(1)/libnumacoll-mpi.so: $(NM_SRCS:%.c=$(BUILD)/$(1)/%.o) $$(LIB_OBJS) $(NM_MAP)
	$(call nm_cc,$(1)) -shared $$(LDFLAGS) -o $$@ $(NM_SRCS:%.c=$(BUILD)/$(1)/%.o) \
	  $$(LIB_OBJS) -Wl,--version-script=$(NM_MAP) -Wl,-z,defs $$(LDLIBS)
endef
$(foreach m,$(NM_BUILT),$(eval $(call nm_lib_rules,$(m))))

# MPICH's mpi.h marks status arrays with access attributes, and GCC 12
# takes MPI_STATUSES_IGNORE ((MPI_Status *)1) for an array of size 0.
$(BUILD)/mpich/tests/%: tests/mpi/%.c tests/mpi/mpit.c tests/mpi/mpit.h tests/mpi/red_ops.h
	@mkdir -p $(dir $@)
	mpicc.mpich -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wno-stringop-overflow -pthread $(LDFLAGS) \
	  -o $@ $< tests/mpi/mpit.c
# numacoll-bench-mpi for MPICH (bench/compare-mpich.sh)
NM_BENCH = $(if $(filter mpich,$(NM_BUILT)),$(BUILD)/mpich/numacoll-bench-mpi)
mpi-lib: $(NM_BENCH)
$(BUILD)/mpich/numacoll-bench-mpi: $(NCB_MPI_SRCS) bench/bench.h
	@mkdir -p $(dir $@)
	mpicc.mpich $(CPPFLAGS) $(CFLAGS) -Wno-stringop-overflow -DNCB_BUILD_MPI -o $@ $(NCB_MPI_SRCS) $(LDFLAGS)

$(BUILD)/mpich/tests/mpit.o $(BUILD)/mpich/tests/mpit_f.o: $(BUILD)/mpich/tests/%.o: tests/mpi/%.c tests/mpi/mpit.h
	@mkdir -p $(dir $@)
	mpicc.mpich -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wno-stringop-overflow $(LDFLAGS) -c -o $@ $<
$(BUILD)/mpich/tests/fortran_reduce: tests/mpi/fortran_reduce.f90 $(BUILD)/mpich/tests/mpit.o $(BUILD)/mpich/tests/mpit_f.o
	mpifort.mpich -O2 -g -Wall -Werror $(LDFLAGS) -J$(dir $@) -o $@ $< \
	  $(BUILD)/mpich/tests/mpit.o $(BUILD)/mpich/tests/mpit_f.o

check-mpich: mpi-lib
	NC_BUILD=$(BUILD) tests/mpi/run-pmpi.sh

install-mpi-lib: $(NM_LIBS)
	$(foreach m,$(NM_BUILT),install -d $(DESTDIR)$(LIBDIR)/numacoll/$(m) && \
	  install -m 755 $(BUILD)/$(m)/libnumacoll-mpi.so $(DESTDIR)$(LIBDIR)/numacoll/$(m)/ &&) true

.DEFAULT_GOAL := $(nm_saved_goal)

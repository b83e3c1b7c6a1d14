# ompi/ompi.mk -- the Open MPI coll component and its MPI tests; included
# by the main Makefile (-include ompi/ompi.mk), whose BUILD, CC, CFLAGS,
# CPPFLAGS, LDFLAGS, LDLIBS and LIB_OBJS it uses. Include it after LIB_OBJS
# is defined: the .so rule names those objects as prerequisites.
#
#   make ompi          $(BUILD)/mca_coll_numacoll.so and the MPI test programs,
#                      for the Open MPI whose mpicc is first on PATH (4.1 or
#                      5.0; ompi/coll_numacoll_compat.h holds what differs)
#   make ompi OMPI_CC=/path/to/mpicc BUILD=build-ompi5
#                      the same for another Open MPI (one BUILD per Open MPI:
#                      the .so is built for exactly one)
#   make check-mpi     tests/mpi/run.sh against $(BUILD) (np 2, 3, 4, 8)
#   make install       (with the library) installs the .so into
#                      $(DESTDIR)$(OMPI_COMPONENT_DIR), by default Open MPI's
#                      own component directory (ompi_info --path pkglibdir;
#                      Debian's when ompi_info is absent), where every
#                      Open MPI program finds it without any setting
#   make install-ompi  copies the .so to $(OMPI_COMPONENT_DIR), by default
#                      ~/.openmpi/components: on Open MPI's default
#                      mca_base_component_path, and needs no root. For every
#                      user, as root: make install-ompi OMPI_COMPONENT_DIR=<ompi_info --path pkglibdir>
#
# The core never depends on Open MPI: without mpicc or without Open MPI's
# development headers these targets print why and do nothing.

# Rules below must not become the default goal when this file is included
# before the main Makefile's first target.
nc_ompi_saved_goal := $(.DEFAULT_GOAL)
$(if $(LIB_OBJS),,$(warning ompi/ompi.mk: LIB_OBJS is empty here; include this file after it is defined))

# The Open MPI to build for, by its compiler wrapper (MPICC is the older
# name of the same setting).
OMPI_CC   ?= $(or $(MPICC),mpicc)
MPICC     := $(OMPI_CC)
# OMPI_COMPONENT_DIR, when set, is where both install targets put the .so.
NC_OMPI_USER_DIR = $(or $(OMPI_COMPONENT_DIR),$(HOME)/.openmpi/components)
NC_OMPI_PKGLIBDIR = $(or $(shell ompi_info --path pkglibdir 2>/dev/null | \
                      sed -n 's/^ *Pkglibdir: *//p'),$(firstword \
                      $(NC_OMPI_LIBDIRS))/openmpi3)
NC_OMPI_SYSTEM_DIR = $(or $(OMPI_COMPONENT_DIR),$(NC_OMPI_PKGLIBDIR))

NC_OMPI_SO   = $(BUILD)/mca_coll_numacoll.so
NC_OMPI_SRCS = ompi/coll_numacoll_component.c ompi/coll_numacoll_module.c \
               ompi/coll_numacoll_red.c \
               ompi/coll_numacoll_hier.c ompi/coll_numacoll_hier_gather.c \
               ompi/coll_numacoll_nb.c ompi/coll_numacoll_gather.c \
               mpi/nm_map.c
NC_OMPI_OBJS = $(NC_OMPI_SRCS:%.c=$(BUILD)/%.o)
NC_OMPI_MAP  = ompi/mca_coll_numacoll.map

NC_MPI_TESTS = bcast_types bcast_derived derived_types barrier_order many_comms errors reduce_ops reduce_types \
               nonblocking gathers rscan two_level decline \
               mismatch threads peer_death shm_room
NC_MPI_BINS  = $(NC_MPI_TESTS:%=$(BUILD)/tests/mpi/%)
NC_MPI_COMMON = tests/mpi/mpit.c

# The Fortran test (the Fortran datatypes through the Fortran bindings),
# built with the Fortran wrapper of the same Open MPI, where the compiler
# that wrapper runs is installed: deps.txt names gfortran, but
# libopenmpi-dev alone (a package build) does not bring it.
MPIFC       ?= $(patsubst %mpicc,%mpifort,$(OMPI_CC))
NC_MPI_FBIN  = $(BUILD)/tests/mpi/fortran_reduce
NC_MPI_FOBJS = $(BUILD)/tests/mpi/mpit.o $(BUILD)/tests/mpi/mpit_f.o

NC_OMPI_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
ifneq ($(NC_OMPI_MPICC),)
NC_OMPI_INCDIRS := $(shell $(MPICC) --showme:incdirs 2>/dev/null)
NC_OMPI_LIBDIRS := $(shell $(MPICC) --showme:libdirs 2>/dev/null)
NC_OMPI_COLL_H  := $(firstword $(wildcard $(addsuffix /ompi/mca/coll/coll.h,$(NC_OMPI_INCDIRS))))
NC_OMPI_CONFIG_H := $(firstword $(wildcard $(addsuffix /opal_config.h,$(NC_OMPI_INCDIRS))))
endif
ifneq ($(NC_OMPI_CONFIG_H),)
NC_OMPI_MAJOR := $(shell sed -n 's/^\#define OMPI_MAJOR_VERSION *//p' $(NC_OMPI_CONFIG_H) | head -n 1)
# Headers opal_config.h names for its thread component, which every
# internal header includes. Debian's libopenmpi-dev 5.0.7 does not ship them
# (4.1 has no such component); tests/ompi5/run.sh adds them from the same
# version's source package.
NC_OMPI_MISSING := $(strip $(foreach h,$(shell sed -n 's/^\#define MCA_threads_[a-z_]*_HEADER "\(..*\)"$$/\1/p' \
                     $(NC_OMPI_CONFIG_H)),$(if $(wildcard $(addsuffix /$(h),$(NC_OMPI_INCDIRS))),,$(h))))
# 5.0 built against an external PMIx includes its pmix.h from the internal
# headers, but mpicc does not name its folder (applications never need it).
ifneq ($(filter-out 0 1 2 3 4,$(NC_OMPI_MAJOR)),)
NC_OMPI_INCDIRS += $(patsubst -I%,%,$(filter -I%,$(shell pkg-config --cflags-only-I pmix 2>/dev/null)))
# The component calls PMIx itself there (its pid, ompi/coll_numacoll_compat.h),
# which -z defs wants named.
NC_OMPI_PMIX_LIBS := $(or $(shell pkg-config --libs-only-L --libs-only-l pmix 2>/dev/null),-lpmix)
# MPI 4.0 sessions exist from Open MPI 5.0 on; tests/mpi/run.sh runs the
# program where it was built.
NC_MPI_TESTS += sessions
endif
endif

NC_OMPI_FC := $(firstword $(shell $(MPIFC) --showme:command 2>/dev/null))
NC_OMPI_FC_OK := $(if $(NC_OMPI_FC),$(shell command -v $(NC_OMPI_FC) 2>/dev/null))

ifeq ($(NC_OMPI_MPICC),)
NC_OMPI_SKIP = $(OMPI_CC) not found
else ifeq ($(NC_OMPI_COLL_H),)
NC_OMPI_SKIP = Open MPI's internal headers (ompi/mca/coll/coll.h) not found under $(NC_OMPI_INCDIRS)
else ifneq ($(NC_OMPI_MISSING),)
NC_OMPI_SKIP = Open MPI $(NC_OMPI_MAJOR)'s development package lacks $(NC_OMPI_MISSING) (Debian's 5.0.7 does; tests/ompi5/run.sh shows how to add them from its source package, docs/ompi.md)
endif

.PHONY: ompi check-mpi install-ompi install-component
install: install-component

ifeq ($(NC_OMPI_SKIP),)

# Open MPI's headers are not ours to keep warning-free: -isystem silences
# them. They compile under -std=c11 as shipped with 4.1, so the component
# keeps the project's -std=c11 -Wall -Wextra -Werror (no gnu11 needed).
$(NC_OMPI_OBJS): CPPFLAGS += $(addprefix -isystem ,$(NC_OMPI_INCDIRS))

ompi: $(NC_OMPI_SO) $(NC_MPI_BINS) $(if $(NC_OMPI_FC_OK),$(NC_MPI_FBIN),nc-no-fortran)

# The core objects are -fPIC and linked in whole, so the .so needs nothing
# but Open MPI's own libraries at load time; -z defs proves it. The map
# exports only mca_coll_numacoll_component. -z nodelete keeps it mapped
# after Open MPI unloads the component: a thread that exits later still
# runs the destructor of its MPI_T counter shard (coll_numacoll_component.c).
$(NC_OMPI_SO): $(NC_OMPI_OBJS) $(LIB_OBJS) $(NC_OMPI_MAP)
	$(CC) -shared $(LDFLAGS) -o $@ $(NC_OMPI_OBJS) $(LIB_OBJS) \
	  -Wl,--version-script=$(NC_OMPI_MAP) -Wl,-z,defs -Wl,-z,nodelete \
	  $(addprefix -L,$(NC_OMPI_LIBDIRS)) -lmpi -lopen-pal $(NC_OMPI_PMIX_LIBS) \
	  $(LDLIBS)

# Test programs are plain MPI (they must pass with the component absent),
# built with mpicc; LDFLAGS carries the sanitizer under SANITIZE=1.
$(NC_MPI_BINS): $(BUILD)/tests/mpi/%: tests/mpi/%.c $(NC_MPI_COMMON) tests/mpi/mpit.h tests/mpi/red_ops.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -pthread $(LDFLAGS) \
	  -o $@ $< $(NC_MPI_COMMON)

# The C helpers as objects for the Fortran link; -J keeps its .mod files
# in the build tree.
$(NC_MPI_FOBJS): $(BUILD)/tests/mpi/%.o: tests/mpi/%.c tests/mpi/mpit.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror $(LDFLAGS) -c -o $@ $<
$(NC_MPI_FBIN): tests/mpi/fortran_reduce.f90 $(NC_MPI_FOBJS)
	$(MPIFC) -O2 -g -Wall -Werror $(LDFLAGS) -J$(dir $@) -o $@ $< $(NC_MPI_FOBJS)

.PHONY: nc-no-fortran
nc-no-fortran:
	@echo "numacoll: $(MPIFC) has no Fortran compiler$(if $(NC_OMPI_FC), ($(NC_OMPI_FC) not found)); skipping tests/mpi/fortran_reduce (Debian: apt-get install gfortran)"

check-mpi: ompi
	NC_BUILD=$(BUILD) tests/mpi/run.sh

install-ompi: $(NC_OMPI_SO)
	install -d $(DESTDIR)$(NC_OMPI_USER_DIR)
	install -m 755 $(NC_OMPI_SO) $(DESTDIR)$(NC_OMPI_USER_DIR)/
	@echo "numacoll: installed; check with: ompi_info | grep numacoll"

# Mode 644, as Open MPI's own components: a plugin is loaded, not run.
install-component: $(NC_OMPI_SO)
	install -d $(DESTDIR)$(NC_OMPI_SYSTEM_DIR)
	install -m 644 $(NC_OMPI_SO) $(DESTDIR)$(NC_OMPI_SYSTEM_DIR)/

-include $(NC_OMPI_OBJS:.o=.d)

else

ompi check-mpi install-ompi install-component:
	@echo "numacoll: $(NC_OMPI_SKIP); skipping '$@' (Debian: apt-get install libopenmpi-dev openmpi-bin)"

endif

.DEFAULT_GOAL := $(nc_ompi_saved_goal)

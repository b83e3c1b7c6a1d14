# man/man.mk -- included by the Makefile after tools/tune/tuner.mk; uses
# its BUILD, VERSION, MANDIR and DESTDIR.
#
#   $(BUILD)/man/numacoll-bench.1  numacoll-bench --help as a man page
#   $(BUILD)/man/numacoll-tune.1   numacoll-tune --help as a man page
#   $(BUILD)/man/numacoll-bench-mpi.1  the MPI twin's, when mpicc built it
#   make install                   installs them into $(MANDIR)/man1
#
# Written from the built programs' --help by man/help2roff.awk, so a page
# cannot say other than its program; needs only awk.

NC_MAN_PAGES = $(BUILD)/man/numacoll-bench.1 $(BUILD)/man/numacoll-tune.1
ifneq ($(NCB_HAVE_MPICC),)
NC_MAN_PAGES += $(BUILD)/man/numacoll-bench-mpi.1
endif

all: $(NC_MAN_PAGES)

# NAME lines: what each program is, in a few words.
NC_MAN_SUMMARY_numacoll-bench = benchmark of numacoll's collectives on this machine
NC_MAN_SUMMARY_numacoll-tune  = write a numacoll tuning table measured on this machine
NC_MAN_SUMMARY_numacoll-bench-mpi = benchmark of the collectives Open MPI selects, under mpirun

$(BUILD)/man/%.1: $(BUILD)/% man/help2roff.awk
	@mkdir -p $(dir $@)
	$< --help > $@.help
	awk -f man/help2roff.awk -v name=$* -v version=$(VERSION) \
	  -v summary="$(NC_MAN_SUMMARY_$*)" $@.help > $@.tmp
	mv -f $@.tmp $@; rm -f $@.help

# An extra prerequisite of the Makefile's install.
.PHONY: install-man
install: install-man
install-man: $(NC_MAN_PAGES)
	install -d $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(NC_MAN_PAGES) $(DESTDIR)$(MANDIR)/man1/

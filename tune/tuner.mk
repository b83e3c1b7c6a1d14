# tune/tuner.mk -- included by the Makefile after its own rules; uses its
# BUILD, CFLAGS, LDFLAGS, LDLIBS, STATIC, BENCH_OBJS, PREFIX and DESTDIR.
#
#   $(BUILD)/numacoll-tune   the autotuner (docs/autotuner.md), part of `make`
#   make tune-quick          a --quick run (under a minute) writing
#                            $(BUILD)/tuned-quick.txt, which the tests load
#   make install             installs numacoll-tune next to numacoll-bench
#
# The tuner measures with the benchmark's own code, so it links every
# benchmark object except the benchmark's main().

TUNER      = $(BUILD)/numacoll-tune
TUNER_SRCS = tune/numacoll-tune.c tune/tuner_run.c tune/tuner_cands.c \
             tune/tuner_table.c tune/tuner_machine.c
TUNER_OBJS = $(TUNER_SRCS:%.c=$(BUILD)/%.o)
TUNER_BENCH_OBJS = $(filter-out $(BUILD)/bench/numacoll-bench.o,$(BENCH_OBJS))
TUNER_QUICK_OUT = $(BUILD)/tuned-quick.txt

DEPS += $(TUNER_OBJS:.o=.d)

.PHONY: tune-quick install-tune

all: $(TUNER)

$(TUNER): $(TUNER_OBJS) $(TUNER_BENCH_OBJS) $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tune-quick: $(TUNER)
	$(TUNER) --quick -o $(TUNER_QUICK_OUT)

# An extra prerequisite of the Makefile's install (which runs its own
# recipe after this one).
install: install-tune
install-tune: $(TUNER)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 $(TUNER) $(DESTDIR)$(PREFIX)/bin/

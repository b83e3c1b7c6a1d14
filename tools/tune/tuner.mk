# tools/tune/tuner.mk -- included by the Makefile after its own rules; uses
# its BUILD, CFLAGS, LDFLAGS, LDLIBS, STATIC, SUPPORT_OBJS, MODEL_OBJS,
# BENCH_OBJS, BINDIR and DESTDIR.
#
#   $(BUILD)/numacoll-tune   the autotuner (docs/autotuner.md), part of `make`
#   make tune-quick          a --quick run (under a minute) writing
#                            $(BUILD)/tuned-quick.txt, which the tests load
#   make install             installs numacoll-tune next to numacoll-bench
#
# The tuner measures with the benchmark's own code, so it links every
# benchmark object except the benchmark's main(), and the forked runner;
# its performance model (tools/tune/model.c, MODEL_SRCS) is the Makefile's,
# because the tests link it too. The library knows nothing of either.

TUNER      = $(BUILD)/numacoll-tune
TUNER_SRCS = tools/tune/numacoll-tune.c tools/tune/tuner_run.c \
             tools/tune/tuner_cands.c tools/tune/tuner_table.c \
             tools/tune/tuner_machine.c tools/tune/tuner_decline.c
TUNER_OBJS = $(TUNER_SRCS:%.c=$(BUILD)/%.o)
TUNER_BENCH_OBJS = $(filter-out $(BUILD)/bench/numacoll-bench.o,$(BENCH_OBJS))
# What the tests link of the tuner (tests/test_tune_tuner.c): the
# candidates and the points-to-rules code, with the benchmark's objects.
TUNER_CORE_OBJS = $(BUILD)/tools/tune/tuner_cands.o \
                  $(BUILD)/tools/tune/tuner_table.o
$(TESTS): $(TUNER_CORE_OBJS) $(TUNER_BENCH_OBJS)
TUNER_QUICK_OUT = $(BUILD)/tuned-quick.txt

DEPS += $(TUNER_OBJS:.o=.d)

.PHONY: tune-quick install-tune

all: $(TUNER)

$(TUNER): $(TUNER_OBJS) $(MODEL_OBJS) $(TUNER_BENCH_OBJS) $(SUPPORT_OBJS) \
          $(STATIC)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

tune-quick: $(TUNER)
	$(TUNER) --quick -o $(TUNER_QUICK_OUT)

# An extra prerequisite of the Makefile's install (which runs its own
# recipe after this one).
install: install-tune
install-tune: $(TUNER)
	install -d $(DESTDIR)$(BINDIR)
	install -m 755 $(TUNER) $(DESTDIR)$(BINDIR)/

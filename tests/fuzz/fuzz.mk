# The fuzz harnesses, built with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer apart from the automake build (which uses the
# configured compiler and no sanitizers): the engine sources the parsers
# need are compiled again here.  tests/run-fuzz-tests.sh runs
#   make -f SRCDIR/tests/fuzz/fuzz.mk -C OUTDIR TOP=SRCDIR
# Incremental: objects are rebuilt when a source or header they use changes.
TOP ?= ../..
FUZZ_CXX ?= clang++
SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=undefined
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (libFuzzer's convention) lowers
# limits that valid but huge inputs would otherwise hit (topology_io.cpp).
FUZZ_CXXFLAGS = -std=c++17 -g -O1 -fno-omit-frame-pointer -Wall -Wextra $(SANITIZE) \
	-DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I$(TOP)/common -I$(TOP)/tests/fuzz -MMD -MP

# The parsers and what they call (the algorithm table links no planner:
# the registry is planners/make_plan.cpp).
ENGINE = core/units core/algorithm core/max_min decide/decision topology/topology topology/topology_io \
	topology/discovery topology/device_topology topology/measured
HARNESSES = fuzz_rules fuzz_topology fuzz_discovery fuzz_units fuzz_measured
ENGINE_OBJS = $(ENGINE:%=engine/%.o)

all: $(HARNESSES)

# Coverage instrumentation (fuzzer-no-link) for the engine and the
# harnesses; libFuzzer's main only at the link.
engine/%.o: $(TOP)/common/%.cpp
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

%.o: $(TOP)/tests/fuzz/%.cpp
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

fuzz_%: fuzz_%.o $(ENGINE_OBJS)
	$(FUZZ_CXX) $(SANITIZE) -fsanitize=fuzzer $^ -o $@

.PHONY: all
.SECONDARY:
-include $(wildcard *.d engine/*/*.d)

// The fuzzers link the parsers and not the planners (compiling the whole
// engine with the sanitizers would take minutes), but the algorithm table
// (core/algorithm.cpp) points at every planner.  Weak stand-ins, generated
// from the same table so that a new row needs nothing here; nothing the
// harnesses call plans, and a real definition (no_planner,
// plan_device_only in algorithm.cpp) wins over a weak one.
#include "core/algorithm.hpp"

namespace topoar {

#define TOPOAR_FUZZ_STUB_(num, ident, name, alias, planner, ...)                                   \
    __attribute__((weak)) Status planner(const Topology&, std::size_t, int, const PlanOptions&, Plan*) { \
        return Status::internal("planners are not linked into the fuzz harnesses");                \
    }
TOPOAR_ALGORITHMS(TOPOAR_FUZZ_STUB_)
#undef TOPOAR_FUZZ_STUB_

}  // namespace topoar

// Shared helpers of the cost-model tests (test_cost_model, test_paper_cases):
// a prediction that must succeed, and a relative comparison that names what
// it compared.  Include after <cmocka.h>.
#pragma once

#include <cmath>

#include "model/cost_model.hpp"

namespace topoar_test {

inline topoar::Prediction run(const topoar::Topology& topo, const topoar::Plan& plan, std::size_t elem,
                              const topoar::CostParams& c) {
    topoar::Prediction p;
    topoar::Status s = topoar::predict(topo, plan, elem, c, &p);
    if (!s) fail_msg("predict: %s", s.message().c_str());
    return p;
}

// got within rel (a fraction) of want.
inline void expect_near(double got, double want, double rel, const char* what) {
    if (!(std::fabs(got - want) <= rel * std::fabs(want)))
        fail_msg("%s: predicted %.9g, expected %.9g (off by %.3f%%, allowed %.2f%%)", what, got, want,
                 100.0 * (got - want) / want, 100.0 * rel);
}

}  // namespace topoar_test

#include "core/algorithm.hpp"

#include <algorithm>

namespace topoar {

namespace {

#define TOPOAR_ALG_ROW_(num, ident, name, alias, planner, simplicity, multi_host, device_only, description) \
    {Algorithm::ident, name, alias, simplicity, multi_host, device_only, description},
const AlgorithmInfo kTable[kNumAlgorithms] = {TOPOAR_ALGORITHMS(TOPOAR_ALG_ROW_)};
#undef TOPOAR_ALG_ROW_

// Row i must be number i: the numbers are array indices everywhere.
constexpr bool numbered_in_order() {
    int i = 0;
    bool ok = true;
#define TOPOAR_ALG_CHECK_(num, ...) ok = ok && (num) == i++;
    TOPOAR_ALGORITHMS(TOPOAR_ALG_CHECK_)
#undef TOPOAR_ALG_CHECK_
    return ok;
}
static_assert(numbered_in_order(), "TOPOAR_ALGORITHMS rows must be numbered 0, 1, 2, ... in order");

}  // namespace

const AlgorithmInfo* algorithm_table() { return kTable; }

const AlgorithmInfo& algorithm_info(Algorithm a) {
    int i = static_cast<int>(a);
    return (i >= 0 && i < kNumAlgorithms) ? kTable[i] : kTable[0];
}

const char* algorithm_name(Algorithm a) {
    int i = static_cast<int>(a);
    return (i >= 0 && i < kNumAlgorithms) ? kTable[i].name : "unknown";
}

bool algorithm_from_name(const std::string& name, Algorithm* out) {
    for (const AlgorithmInfo& a : kTable) {
        if (name == a.name || (a.alias && name == a.alias)) {
            *out = a.id;
            return true;
        }
    }
    return false;
}

namespace {
std::vector<Algorithm> candidates(bool device) {
    std::vector<const AlgorithmInfo*> rows;
    for (const AlgorithmInfo& a : kTable)
        if (a.simplicity >= 0 && (device || !a.device_only)) rows.push_back(&a);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const AlgorithmInfo* x, const AlgorithmInfo* y) { return x->simplicity < y->simplicity; });
    std::vector<Algorithm> out;
    for (const AlgorithmInfo* a : rows) out.push_back(a->id);
    return out;
}
}  // namespace

std::vector<Algorithm> model_candidates() { return candidates(false); }
std::vector<Algorithm> device_model_candidates() { return candidates(true); }

std::vector<Algorithm> concrete_algorithms() {
    std::vector<Algorithm> out;
    for (const AlgorithmInfo& a : kTable)
        if (a.id != Algorithm::automatic) out.push_back(a.id);
    return out;
}

std::vector<Algorithm> host_algorithms() {
    std::vector<Algorithm> out;
    for (const AlgorithmInfo& a : kTable)
        if (a.id != Algorithm::automatic && !a.device_only) out.push_back(a.id);
    return out;
}

std::string algorithm_names(const std::vector<Algorithm>& algs) {
    std::string s;
    for (Algorithm a : algs) s += (s.empty() ? "" : ", ") + std::string(algorithm_name(a));
    return s;
}

}  // namespace topoar

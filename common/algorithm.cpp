#include "algorithm.hpp"

namespace topoar {

namespace {
const char* const kNames[kNumAlgorithms] = {
    "auto", "ring", "recursive_doubling", "hring", "flexreduce", "tree",
};
}  // namespace

const char* algorithm_name(Algorithm a) {
    int i = static_cast<int>(a);
    return (i >= 0 && i < kNumAlgorithms) ? kNames[i] : "unknown";
}

bool algorithm_from_name(const std::string& name, Algorithm* out) {
    for (int i = 0; i < kNumAlgorithms; ++i) {
        if (name == kNames[i]) {
            *out = static_cast<Algorithm>(i);
            return true;
        }
    }
    return false;
}

}  // namespace topoar

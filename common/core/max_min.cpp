// max_min_rates (max_min.hpp): progressive filling.
#include "core/max_min.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace topoar {

std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<int>>& flow_links) {
    const std::size_t nf = flow_links.size();
    std::vector<double> rate(nf, -1), rem(capacity);
    std::vector<int> cnt(capacity.size(), 0);
    std::size_t left = 0;
    for (std::size_t f = 0; f < nf; ++f) {
        bool limited = false;
        for (int l : flow_links[f])
            if (std::isfinite(capacity[static_cast<std::size_t>(l)])) {
                ++cnt[static_cast<std::size_t>(l)];
                limited = true;
            }
        if (limited)
            ++left;
        else
            rate[f] = std::numeric_limits<double>::infinity();
    }
    while (left > 0) {
        double best = std::numeric_limits<double>::infinity();
        for (std::size_t l = 0; l < capacity.size(); ++l)
            if (cnt[l] > 0) best = std::min(best, rem[l] / cnt[l]);
        best = std::max(best, 0.0);
        const double limit = best * (1 + 1e-12);
        std::vector<std::size_t> bottlenecks;
        for (std::size_t l = 0; l < capacity.size(); ++l)
            if (cnt[l] > 0 && rem[l] / cnt[l] <= limit) bottlenecks.push_back(l);
        for (std::size_t f = 0; f < nf; ++f) {
            if (rate[f] >= 0) continue;
            bool hit = false;
            for (int l : flow_links[f])
                if (std::find(bottlenecks.begin(), bottlenecks.end(), static_cast<std::size_t>(l)) !=
                    bottlenecks.end())
                    hit = true;
            if (!hit) continue;
            rate[f] = best;
            --left;
            for (int l : flow_links[f])
                if (std::isfinite(capacity[static_cast<std::size_t>(l)])) {
                    rem[static_cast<std::size_t>(l)] = std::max(0.0, rem[static_cast<std::size_t>(l)] - best);
                    --cnt[static_cast<std::size_t>(l)];
                }
        }
    }
    return rate;
}

}  // namespace topoar

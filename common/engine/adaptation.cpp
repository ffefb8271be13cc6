#include "engine/adaptation.hpp"

#include <cstdio>
#include <sstream>

#include "engine/selection.hpp"
#include "model/cost_model.hpp"
#include "planners/planners.hpp"
#include "topology/probe.hpp"

namespace topoar {

double predicted_seconds(const Topology& topo, const CostParams& model, const PlanHandle& plan,
                         const PlanHandle& tail, std::size_t num_chunks, std::size_t elem_size) {
    constexpr std::size_t kMaxSteps = 200000;
    auto of = [&](const PlanHandle& p) -> double {
        if (p->predicted < 0) {
            Plan full;
            Prediction pr;
            p->predicted = 0;
            if (make_plan(p->algorithm, topo, p->count, -1, p->options, &full) &&
                count_steps(full, elem_size, model.segment_bytes) <= kMaxSteps &&
                predict(topo, full, elem_size, model, &pr))
                p->predicted = pr.time;
        }
        return p->predicted;
    };
    if (plan == nullptr) return 0;
    const double chunk = of(plan), last = tail ? of(tail) : 0;
    if (chunk <= 0 || (tail && last <= 0)) return 0;
    const std::size_t full = num_chunks - (tail ? 1 : 0);
    return static_cast<double>(full) * chunk + last;
}

Adaptation::Adaptation(const EngineConfig& cfg, int rank, int size)
    : enabled_(cfg.adapt), interval_(cfg.adapt_interval), threshold_(cfg.adapt_threshold), max_(cfg.adapt_max),
      rank_(rank), size_(size) {}

Status Adaptation::note(double seconds, double predicted, std::size_t bytes, SetupIo& io, bool* remeasure) {
    *remeasure = false;
    if (!enabled_) return Status::ok();
    if (probe_debug() && rank_ == 0 && predicted <= 0)
        std::fprintf(stderr, "adapt: no prediction for %zu bytes\n", bytes);
    if (predicted <= 0) return Status::ok();
    window_.push_back(seconds / predicted);
    if (static_cast<int>(window_.size()) < interval_) return Status::ok();
    // Every rank's mean ratio of the window, gathered: the same numbers
    // everywhere, so the same decision.
    double mine = 0;
    for (double r : window_) mine += r;
    mine /= static_cast<double>(window_.size());
    window_.clear();
    double mean = 0;
    TOPOAR_TRY(mean_over_ranks(io, size_, mine, &mean));
    if (probe_debug() && rank_ == 0)
        std::fprintf(stderr, "adapt: window mean measured/predicted %.3f (baseline %.3f, predicted %.4f s)\n", mean,
                     baseline_, predicted);
    if (baseline_ <= 0) {
        // The model's own error on this machine: what later windows are
        // compared with.
        baseline_ = mean;
        return Status::ok();
    }
    if (mean <= (1 + threshold_) * baseline_ || replans_ >= max_) return Status::ok();
    last_mean_ = mean;
    *remeasure = true;
    return Status::ok();
}

std::string Adaptation::replanned(double ms, const std::string& network, const std::string& table_before,
                                  const std::string& table) {
    std::ostringstream os;
    os << "calls ran " << last_mean_ / baseline_ << "x slower than after set-up (measured/predicted " << last_mean_
       << " vs " << baseline_ << "): links measured again";
    baseline_ = 0;
    ++replans_;
    os << " in " << ms << " ms (re-plan " << replans_ << " of at most " << max_ << ")\n" << network;
    if (!table.empty()) os << (table == table_before ? "auto's table is unchanged:\n" : "auto's table now:\n") << table;
    return os.str();
}

}  // namespace topoar

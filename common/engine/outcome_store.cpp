// The contests' outcomes kept for the job (outcome_store.hpp).
#include "engine/outcome_store.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

#include "engine/network_setup.hpp"

namespace topoar {

namespace {
constexpr std::uint64_t kPrevious = 0xff;

std::uint64_t fnv1a64(const std::string& s) {
    std::uint64_t h = 14695981039346656037ull;
    for (unsigned char c : s) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// Links as exact hex floats: a key must not round two measurements together.
void put_link(std::ostringstream& k, const Link& l) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a/%a", l.bandwidth, l.latency);
    k << buf;
}
}  // namespace

std::uint64_t encode_outcome(const std::vector<Contender>& who, int winner) {
    if (who.empty() || who.size() > 3 || winner < 0 || winner >= static_cast<int>(who.size())) return 0;
    std::uint64_t code = who.size() | static_cast<std::uint64_t>(winner) << 8;
    for (std::size_t i = 0; i < who.size(); ++i) {
        const int a = static_cast<int>(who[i].algorithm);
        if (!who[i].hand_down && (a < 0 || a >= static_cast<int>(kPrevious))) return 0;
        code |= (who[i].hand_down ? kPrevious : static_cast<std::uint64_t>(a)) << (16 + 8 * i);
    }
    return code;
}

bool decode_outcome(std::uint64_t code, std::vector<Contender>* who, int* winner) {
    const std::size_t n = code & 0xff;
    const int w = static_cast<int>(code >> 8 & 0xff);
    if (n < 1 || n > 3 || w >= static_cast<int>(n) || code >> (16 + 8 * n) != 0) return false;
    std::vector<Contender> out;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t a = code >> (16 + 8 * i) & 0xff;
        Contender c;
        if (a == kPrevious) {
            c.hand_down = true;
        } else {
            if (a >= static_cast<std::uint64_t>(kNumAlgorithms)) return false;
            c.algorithm = static_cast<Algorithm>(a);
        }
        out.push_back(c);
    }
    *who = std::move(out);
    *winner = w;
    return true;
}

std::uint64_t contest_key(const Topology& topo, const EngineConfig& cfg, const DefaultTableOptions& table) {
    // The tree without names: levels, shape, ranks, links.  Two groups on
    // other hosts with the same ranks per host and the same links share it.
    std::ostringstream k;
    k << "topoar contest v1\n";
    for (const TopoNode& n : topo.nodes()) {
        k << static_cast<int>(n.level) << ' ' << n.parent << ' ' << n.rank << ' ';
        put_link(k, n.up);
        for (int c : n.children) k << ',' << c;
        k << '\n';
    }
    k << table_options_key(table) << '\n'
      << static_cast<int>(cfg.algorithm) << ' ' << cfg.model_table << ' ' << cfg.single_node_fallback << ' '
      << cfg.small_msg_size << ' ' << cfg.trial_calls << ' ' << cfg.trial_max_size << ' ' << SizeTrials::kBlock;
    return fnv1a64(k.str());
}

OutcomeStore& OutcomeStore::process() {
    static OutcomeStore store;
    return store;
}

void OutcomeStore::put(std::uint64_t key, int cls, std::uint64_t code) {
    if (cls < 0 || cls >= SizeTrials::kClasses || code == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_key_.find(key);
    if (it == by_key_.end()) {
        if (order_.size() >= kMaxKeys) {
            auto old = by_key_.find(order_.front());
            for (std::uint64_t c : old->second) count_ -= c != 0;
            by_key_.erase(old);
            order_.erase(order_.begin());
        }
        it = by_key_.emplace(key, Codes{}).first;
        order_.push_back(key);
    }
    std::uint64_t& slot = it->second[static_cast<std::size_t>(cls)];
    count_ += slot == 0;
    slot = code;
}

OutcomeStore::Codes OutcomeStore::get(std::uint64_t key) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = by_key_.find(key);
    return it == by_key_.end() ? Codes{} : it->second;
}

int OutcomeStore::count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
}

void OutcomeStore::clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    by_key_.clear();
    order_.clear();
    count_ = 0;
}

}  // namespace topoar

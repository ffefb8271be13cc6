// The contests' outcomes kept for the job (outcome_store.hpp).
#include "engine/outcome_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "core/hash.hpp"
#include "engine/network_setup.hpp"

namespace topoar {

namespace {
constexpr std::uint64_t kPrevious = 0xff;

std::uint64_t fnv1a64(const std::string& s) { return fnv1a(s.data(), s.size()); }

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

namespace {
// The tree as text: levels, shape, ranks, links (exact, or in quarter
// octaves of bandwidth and half octaves of latency); host and rack names
// only when `names`.
std::string shape_text(const Topology& topo, bool names, bool coarse) {
    std::ostringstream k;
    for (const TopoNode& n : topo.nodes()) {
        k << static_cast<int>(n.level) << ' ' << n.parent << ' ' << n.rank << ' ';
        if (names && is_network_level(n.level)) k << n.name << ' ';
        if (coarse)
            k << (n.up.bandwidth > 0 ? std::lround(4 * std::log2(n.up.bandwidth)) : 0L) << '/'
              << (n.up.latency > 0 ? std::lround(2 * std::log2(n.up.latency)) : 0L);
        else
            put_link(k, n.up);
        for (int c : n.children) k << ',' << c;
        k << '\n';
    }
    return k.str();
}

std::string settings_text(const EngineConfig& cfg, const DefaultTableOptions& table) {
    std::ostringstream k;
    k << table_options_key(table) << '\n'
      << static_cast<int>(cfg.algorithm) << ' ' << cfg.model_table << ' ' << cfg.single_node_fallback << ' '
      << cfg.small_msg_size << ' ' << cfg.trial_calls << ' ' << cfg.trial_max_size << ' ' << SizeTrials::kBlock
      << ' ' << cfg.trial_watch;
    return k.str();
}
}  // namespace

std::uint64_t contest_key(const Topology& topo, const EngineConfig& cfg, const DefaultTableOptions& table) {
    // Without names: two groups on other hosts with the same ranks per
    // host and the same links share it.
    return fnv1a64("topoar contest v1\n" + shape_text(topo, false, false) + settings_text(cfg, table));
}

std::uint64_t contest_file_key(const Topology& topo, const EngineConfig& cfg, const DefaultTableOptions& table) {
    return fnv1a64(std::string("topoar contest file v1 built " __DATE__ " " __TIME__ "\n") +
                   shape_text(topo, true, true) + settings_text(cfg, table));
}

std::string contest_file_path(const std::string& dir, std::uint64_t file_key) {
    char name[64];
    std::snprintf(name, sizeof name, "/topoar-contest-%016llx.txt", static_cast<unsigned long long>(file_key));
    return dir + name;
}

bool read_contest_file(const std::string& path, std::uint64_t file_key, OutcomeStore::Codes* codes,
                       std::string* problem) {
    problem->clear();
    std::ifstream in(path);
    if (!in) {
        if (errno != ENOENT) *problem = path + ": cannot read: " + std::strerror(errno);
        return false;
    }
    OutcomeStore::Codes out{};
    std::string line;
    int no = 0;
    auto bad = [&](const std::string& what) {
        *problem = path + ":" + std::to_string(no) + ": " + what;
        return false;
    };
    while (std::getline(in, line)) {
        ++no;
        std::istringstream ls(line);
        std::string word, extra;
        if (no == 1) {
            if (line != "# topoar contest outcomes v1") return bad("not a topoar contest file (first line)");
            continue;
        }
        ls >> word;
        if (word == "key") {
            std::string hex;
            ls >> hex;
            char* end = nullptr;
            const unsigned long long k = std::strtoull(hex.c_str(), &end, 16);
            if (hex.empty() || *end || ls >> extra) return bad("a bad key line");
            if (k != file_key) return bad("written for another cluster, shape, build or settings");
            if (no != 2) return bad("the key must be the second line");
        } else if (word == "class") {
            if (no < 3) return bad("a class before the key");
            int cls = -1;
            std::string hex;
            ls >> cls >> hex;
            char* end = nullptr;
            const unsigned long long code = std::strtoull(hex.c_str(), &end, 16);
            std::vector<Contender> who;
            int w = -1;
            if (!ls || cls < 0 || cls >= SizeTrials::kClasses || hex.empty() || *end || ls >> extra)
                return bad("a bad class line");
            if (!decode_outcome(code, &who, &w)) return bad("an outcome that does not read back");
            out[static_cast<std::size_t>(cls)] = code;
        } else if (!word.empty()) {
            return bad("unknown line '" + word + "'");
        }
    }
    if (no < 2) return bad("no key");
    *codes = out;
    return true;
}

Status write_contest_file(const std::string& path, std::uint64_t file_key, const OutcomeStore::Codes& codes) {
    std::string text = "# topoar contest outcomes v1\n";
    char line[96];
    std::snprintf(line, sizeof line, "key %016llx\n", static_cast<unsigned long long>(file_key));
    text += line;
    for (std::size_t c = 0; c < codes.size(); ++c) {
        if (codes[c] == 0) continue;
        std::snprintf(line, sizeof line, "class %zu %llx\n", c, static_cast<unsigned long long>(codes[c]));
        text += line;
    }
    const std::size_t slash = path.rfind('/');
    std::string tmp = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) +
                      "/.topoar-contest-XXXXXX";
    const int fd = mkstemp(&tmp[0]);
    if (fd < 0) return Status(Code::io_error, path + ": cannot write: " + std::strerror(errno));
    (void) fchmod(fd, 0644);  // like any file the user writes there
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    const bool ok = done == text.size() && fsync(fd) == 0;
    const int err = errno;
    close(fd);
    if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(ok ? errno : err);
        unlink(tmp.c_str());
        return Status(Code::io_error, path + ": cannot write: " + why);
    }
    return Status::ok();
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

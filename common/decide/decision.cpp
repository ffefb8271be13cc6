// The decision table: rules, lookup, and the rules file format
// (docs/rules-format.md).
#include "decide/decision.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace topoar {

namespace {

const char* const kMemNames[] = {"any", "host", "cuda"};
const char* const kUniformNames[] = {"any", "yes", "no"};

// The collectives rules exist for.  Only all-reduce today; the word is there
// so that one file can one day carry rules for more.
const char kCollective[] = "allreduce";

const char kHeader[] = "# topoar rules v";
const int kVersion = 1;

std::string at(const std::string& origin, int line) { return origin + ":" + std::to_string(line) + ": "; }

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Non-negative decimal integer without sign or unit, at most `max`.
bool parse_count(const std::string& s, long long max, long long* out) {
    if (!all_digits(s) || s.size() > 18) return false;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    if (v > max) return false;
    *out = v;
    return true;
}

// "LO-HI", "LO-", "-HI": splits at the one '-'; false if there is none or
// more than one.
bool split_range(const std::string& v, std::string* lo, std::string* hi) {
    std::size_t dash = v.find('-');
    if (dash == std::string::npos || v.find('-', dash + 1) != std::string::npos) return false;
    *lo = v.substr(0, dash);
    *hi = v.substr(dash + 1);
    return !(lo->empty() && hi->empty());
}

Status parse_size_range(const std::string& v, SizeRange* out) {
    if (v == "any") {
        *out = SizeRange{};
        return Status::ok();
    }
    std::string lo, hi;
    if (!split_range(v, &lo, &hi))
        return Status::invalid("bad size range '" + excerpt(v) +
                               "': expected LO-HI, LO-, -HI or any (bytes, [LO, HI))");
    SizeRange r;
    if (!lo.empty()) TOPOAR_TRY(parse_size(lo, &r.lo));
    if (!hi.empty()) TOPOAR_TRY(parse_size(hi, &r.hi));
    if (r.hi != SizeRange::kUnbounded && r.lo >= r.hi)
        return Status::invalid("empty size range '" + excerpt(v) + "': sizes are [LO, HI), so LO must be below HI");
    *out = r;
    return Status::ok();
}

Status parse_count_range(const std::string& key, const std::string& v, CountRange* out) {
    if (v == "any") {
        *out = CountRange{};
        return Status::ok();
    }
    const long long max = CountRange::kUnbounded - 1;
    const std::string bad =
        "bad " + key + " range '" + excerpt(v) + "': expected N, LO-HI, LO-, -HI or any (whole numbers)";
    CountRange r;
    long long n = 0;
    if (v.find('-') == std::string::npos) {
        if (!parse_count(v, max, &n)) return Status::invalid(bad);
        r.lo = r.hi = static_cast<int>(n);
    } else {
        std::string lo, hi;
        if (!split_range(v, &lo, &hi)) return Status::invalid(bad);
        if (!lo.empty()) {
            if (!parse_count(lo, max, &n)) return Status::invalid(bad);
            r.lo = static_cast<int>(n);
        }
        if (!hi.empty()) {
            if (!parse_count(hi, max, &n)) return Status::invalid(bad);
            r.hi = static_cast<int>(n);
        }
        if (r.lo > r.hi) return Status::invalid("empty " + key + " range '" + excerpt(v) + "': LO must not exceed HI");
    }
    *out = r;
    return Status::ok();
}

std::string format_size_range(const SizeRange& r) {
    return format_size(r.lo) + "-" + (r.hi == SizeRange::kUnbounded ? "" : format_size(r.hi));
}

std::string format_count_range(const CountRange& r) {
    if (r.lo == r.hi) return std::to_string(r.lo);
    return std::to_string(r.lo) + "-" + (r.hi == CountRange::kUnbounded ? "" : std::to_string(r.hi));
}

bool uniform_matches(Uniform u, bool uniform) {
    return u == Uniform::any || (u == Uniform::yes) == uniform;
}

// The fields of one rule line, in file order; "" for a condition that is
// "any" (left out).
enum Column { kColCollective, kColSize, kColRanks, kColNodes, kColPpn, kColRacks, kColUniform, kColMem, kColAlg,
              kColSegment, kNumColumns };

std::vector<std::string> rule_fields(const Rule& r) {
    std::vector<std::string> f(kNumColumns);
    f[kColCollective] = kCollective;
    if (!r.size.is_any()) f[kColSize] = "size=" + format_size_range(r.size);
    if (!r.ranks.is_any()) f[kColRanks] = "ranks=" + format_count_range(r.ranks);
    if (!r.nodes.is_any()) f[kColNodes] = "nodes=" + format_count_range(r.nodes);
    if (!r.ppn.is_any()) f[kColPpn] = "ppn=" + format_count_range(r.ppn);
    if (!r.racks.is_any()) f[kColRacks] = "racks=" + format_count_range(r.racks);
    if (r.uniform != Uniform::any) f[kColUniform] = std::string("uniform=") + kUniformNames[static_cast<int>(r.uniform)];
    if (r.mem != MemType::any) f[kColMem] = std::string("mem=") + memtype_name(r.mem);
    f[kColAlg] = std::string("alg=") + algorithm_name(r.algorithm);
    if (r.has_segment) f[kColSegment] = "segment=" + format_size(r.segment_bytes);
    return f;
}

std::string algorithm_list() { return algorithm_names(concrete_algorithms()); }

// One rule line (already split into words) -> Rule.  Errors without the
// "origin:line: " prefix.
Status parse_rule(const std::vector<std::string>& words, Rule* out) {
    const std::string& first = words[0];
    if (first.find('=') != std::string::npos)
        return Status::invalid(std::string("a rule starts with the collective ('") + kCollective + "'), not '" +
                               excerpt(first) + "'");
    if (first != kCollective)
        return Status::invalid("unknown collective '" + excerpt(first) + "' (rules exist for: " + kCollective + ")");
    Rule r;
    bool seen[kNumColumns] = {};
    for (std::size_t i = 1; i < words.size(); ++i) {
        const std::string& w = words[i];
        std::size_t eq = w.find('=');
        if (eq == std::string::npos) return Status::invalid("expected KEY=VALUE, got '" + excerpt(w) + "'");
        std::string key = w.substr(0, eq), value = w.substr(eq + 1);
        Column col;
        if (key == "size") col = kColSize;
        else if (key == "ranks") col = kColRanks;
        else if (key == "nodes") col = kColNodes;
        else if (key == "ppn") col = kColPpn;
        else if (key == "racks") col = kColRacks;
        else if (key == "uniform") col = kColUniform;
        else if (key == "mem") col = kColMem;
        else if (key == "alg") col = kColAlg;
        else if (key == "segment") col = kColSegment;
        else
            return Status::invalid("unknown key '" + excerpt(key) +
                                   "=' (keys: size, ranks, nodes, ppn, racks, uniform, mem, alg, segment)");
        if (seen[col]) return Status::invalid("'" + key + "=' given twice");
        seen[col] = true;
        if (value.empty()) return Status::invalid("empty value for '" + key + "='");
        switch (col) {
        case kColSize: TOPOAR_TRY(parse_size_range(value, &r.size)); break;
        case kColRanks: TOPOAR_TRY(parse_count_range(key, value, &r.ranks)); break;
        case kColNodes: TOPOAR_TRY(parse_count_range(key, value, &r.nodes)); break;
        case kColPpn: TOPOAR_TRY(parse_count_range(key, value, &r.ppn)); break;
        case kColRacks: TOPOAR_TRY(parse_count_range(key, value, &r.racks)); break;
        case kColUniform:
            if (value == "any") r.uniform = Uniform::any;
            else if (value == "yes") r.uniform = Uniform::yes;
            else if (value == "no") r.uniform = Uniform::no;
            else return Status::invalid("bad uniform '" + excerpt(value) + "' (yes, no or any)");
            break;
        case kColMem:
            if (!memtype_from_name(value, &r.mem))
                return Status::invalid("unknown memory type '" + excerpt(value) + "' (host, cuda or any)");
            break;
        case kColAlg:
            if (value == "auto")
                return Status::invalid("alg=auto is not allowed in a rule (auto is what reads the rules); name one of: " +
                                       algorithm_list());
            if (!algorithm_from_name(value, &r.algorithm))
                return Status::invalid("unknown algorithm '" + excerpt(value) + "' (one of: " + algorithm_list() + ")");
            break;
        case kColSegment:
            TOPOAR_TRY(parse_size(value, &r.segment_bytes));
            r.has_segment = true;
            break;
        default: break;
        }
    }
    if (!seen[kColAlg]) return Status::invalid("rule without alg=");
    *out = std::move(r);
    return Status::ok();
}

}  // namespace

const char* memtype_name(MemType m) {
    int i = static_cast<int>(m);
    return (i >= 0 && i < 3) ? kMemNames[i] : "unknown";
}

bool memtype_from_name(const std::string& name, MemType* out) {
    for (int i = 0; i < 3; ++i) {
        if (name == kMemNames[i]) {
            *out = static_cast<MemType>(i);
            return true;
        }
    }
    return false;
}

CommShape make_comm_shape(int ranks, const std::vector<int>& ranks_per_node, int racks) {
    CommShape s;
    s.ranks = ranks;
    s.nodes = static_cast<int>(ranks_per_node.size());
    s.ppn = ranks_per_node.empty() ? 0 : *std::max_element(ranks_per_node.begin(), ranks_per_node.end());
    s.racks = racks;
    s.uniform = ranks_per_node.empty() ||
                std::all_of(ranks_per_node.begin(), ranks_per_node.end(), [&](int n) { return n == ranks_per_node[0]; });
    return s;
}

// ---------------------------------------------------------------- Rule

bool Rule::matches(std::size_t bytes, const CommShape& shape, MemType call_mem) const {
    return size.contains(bytes) && ranks.contains(shape.ranks) && nodes.contains(shape.nodes) &&
           ppn.contains(shape.ppn) && racks.contains(shape.racks) && uniform_matches(uniform, shape.uniform) &&
           (mem == MemType::any || mem == call_mem);
}

bool Rule::covers(const Rule& o) const {
    return size.covers(o.size) && ranks.covers(o.ranks) && nodes.covers(o.nodes) && ppn.covers(o.ppn) &&
           racks.covers(o.racks) && (uniform == Uniform::any || uniform == o.uniform) &&
           (mem == MemType::any || mem == o.mem);
}

bool Rule::operator==(const Rule& o) const {
    return size == o.size && ranks == o.ranks && nodes == o.nodes && ppn == o.ppn && racks == o.racks &&
           uniform == o.uniform && mem == o.mem && algorithm == o.algorithm && has_segment == o.has_segment &&
           (!has_segment || segment_bytes == o.segment_bytes);
}

// ---------------------------------------------------------------- table

Status DecisionTable::add(Rule rule) {
    if (rule.origin.empty()) rule.origin = "rule " + std::to_string(rules_.size() + 1);
    const std::string where = rule.origin + ": ";
    if (rule.algorithm == Algorithm::automatic || algorithm_name(rule.algorithm) == std::string("unknown"))
        return Status::invalid(where + "a rule must name a concrete algorithm (one of: " + algorithm_list() + ")");
    if (rule.size.hi != SizeRange::kUnbounded && rule.size.lo >= rule.size.hi)
        return Status::invalid(where + "empty size range");
    for (const CountRange* c : {&rule.ranks, &rule.nodes, &rule.ppn, &rule.racks})
        if (c->lo < 0 || c->lo > c->hi) return Status::invalid(where + "empty count range");
    for (const Rule& earlier : rules_)
        if (earlier.covers(rule))
            return Status::invalid(where + "rule never matches: " + earlier.origin +
                                   " comes first and matches every call it would");
    rules_.push_back(std::move(rule));
    return Status::ok();
}

Choice DecisionTable::lookup(std::size_t bytes, const CommShape& shape, MemType mem) const {
    Choice c;
    for (const Rule& r : rules_) {
        if (!r.matches(bytes, shape, mem)) continue;
        c.algorithm = r.algorithm;
        c.has_segment = r.has_segment;
        c.segment_bytes = r.segment_bytes;
        c.origin = r.origin.c_str();
        break;
    }
    return c;
}

std::string format_rule(const Rule& rule) {
    std::string line;
    for (const std::string& f : rule_fields(rule)) {
        if (f.empty()) continue;
        if (!line.empty()) line += ' ';
        line += f;
    }
    return line;
}

std::string DecisionTable::to_text(const std::string& comment) const {
    std::string out = kHeader + std::to_string(kVersion) + "\n";
    std::istringstream cs(comment);
    for (std::string l; std::getline(cs, l);) out += l.empty() ? "#\n" : "# " + l + "\n";
    std::vector<std::vector<std::string>> rows;
    std::vector<std::size_t> width(kNumColumns, 0);
    for (const Rule& r : rules_) {
        rows.push_back(rule_fields(r));
        for (int c = 0; c < kNumColumns; ++c) width[c] = std::max(width[c], rows.back()[c].size());
    }
    for (const auto& row : rows) {
        std::string line;
        std::size_t pending = 0;  // padding owed before the next field
        for (int c = 0; c < kNumColumns; ++c) {
            if (width[c] == 0) continue;  // no rule uses this column
            if (!row[c].empty()) {
                if (!line.empty()) line.append(pending + 2, ' ');
                line += row[c];
                pending = width[c] - row[c].size();
            } else {
                pending += width[c] + 2;
            }
        }
        out += line + "\n";
    }
    return out;
}

Status DecisionTable::from_text(const std::string& text, const std::string& origin, DecisionTable* out) {
    DecisionTable t;
    std::istringstream in(text);
    std::string raw;
    int number = 0;
    bool first_nonblank = true;
    while (std::getline(in, raw)) {
        ++number;
        if (!raw.empty() && raw.back() == '\r') raw.pop_back();
        // The optional header names the format version: refuse a newer one
        // rather than misread it.
        std::string lead = raw.substr(std::min(raw.find_first_not_of(" \t"), raw.size()));
        if (first_nonblank && lead.compare(0, sizeof kHeader - 1, kHeader) == 0) {
            std::string v = lead.substr(sizeof kHeader - 1);
            v = v.substr(0, v.find_first_of(" \t"));
            if (v != std::to_string(kVersion))
                return Status::invalid(at(origin, number) + "unsupported rules format version '" + excerpt(v) +
                                       "' (this topoar reads v" + std::to_string(kVersion) + ")");
        }
        if (!lead.empty()) first_nonblank = false;
        std::string s = raw.substr(0, raw.find('#'));
        std::istringstream ws(s);
        std::vector<std::string> words;
        for (std::string w; ws >> w;) words.push_back(w);
        if (words.empty()) continue;
        Rule r;
        Status st = parse_rule(words, &r);
        if (!st) return Status::invalid(at(origin, number) + st.message());
        r.origin = origin + ":" + std::to_string(number);
        // add() prefixes "origin:line: " itself.
        TOPOAR_TRY(t.add(std::move(r)));
    }
    *out = std::move(t);
    return Status::ok();
}

Status DecisionTable::from_file(const std::string& path, DecisionTable* out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::io(path + ": cannot open rules file: " + std::strerror(errno));
    std::string text;
    char buf[4096];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) text.append(buf, static_cast<std::size_t>(in.gcount()));
    // A directory opens fine and fails on the first read.
    if (in.bad()) return Status::io(path + ": cannot read rules file");
    return from_text(text, path, out);
}

// ---------------------------------------------------------------- sizes

Status parse_size(const std::string& text, std::size_t* bytes) {
    std::size_t i = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    std::string digits = text.substr(0, i), unit = text.substr(i);
    const std::string units = "B, K (or KiB), M (MiB), G (GiB), T (TiB)";
    if (digits.empty())
        return Status::invalid("bad size '" + excerpt(text) +
                               "': expected a whole number of bytes with an optional unit (" + units + ")");
    std::size_t mult = 0;
    if (unit.empty() || unit == "B") mult = 1;
    else if (unit == "K" || unit == "k" || unit == "KiB") mult = std::size_t(1) << 10;
    else if (unit == "M" || unit == "MiB") mult = std::size_t(1) << 20;
    else if (unit == "G" || unit == "GiB") mult = std::size_t(1) << 30;
    else if (unit == "T" || unit == "TiB") mult = std::size_t(1) << 40;
    else if (unit == "KB" || unit == "kB" || unit == "MB" || unit == "GB" || unit == "TB")
        return Status::invalid("bad size '" + excerpt(text) + "': '" + unit + "' is ambiguous (1000 or 1024?); write " +
                               unit.substr(0, 1) + " or " + unit.substr(0, 1) + "iB for 1024-based units");
    else if (unit[0] == '.')
        return Status::invalid("bad size '" + excerpt(text) +
                               "': sizes are whole numbers (write 1536 or 1536B, not 1.5K)");
    else
        return Status::invalid("bad size '" + excerpt(text) + "': unknown unit '" + excerpt(unit) + "' (" + units +
                               ")");
    errno = 0;
    unsigned long long v = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE || digits.size() > 20 || v > SIZE_MAX / mult)
        return Status::invalid("bad size '" + excerpt(text) + "': out of range");
    *bytes = static_cast<std::size_t>(v) * mult;
    return Status::ok();
}

std::string format_size(std::size_t bytes) {
    static const struct { int shift; const char* name; } units[] = {{40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}};
    if (bytes == 0) return "0";
    for (const auto& u : units) {
        std::size_t m = std::size_t(1) << u.shift;
        if (bytes % m == 0) return std::to_string(bytes / m) + u.name;
    }
    return std::to_string(bytes);
}

}  // namespace topoar

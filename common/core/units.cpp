#include "core/units.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <utility>

namespace topoar {

namespace {

// A unit is a decimal exponent plus an exact binary factor.  The decimal part
// is folded into the number's own exponent before strtod, so "0.3us" rounds
// once (to the double nearest 3e-7) instead of 0.3 * 1e-6 rounding twice.
struct Unit {
    const char* name;  // as written
    int exp10;         // value = number * 10^exp10 * factor
    double factor;     // exact power of two: 1/8 for bits, 1024^k for KiB...
    bool prefix;       // name[0] is a size prefix, matched case-insensitively
};

const Unit kBandwidthUnits[] = {
    {"bit", 0, 0.125, false},         {"kbit", 3, 0.125, true},
    {"Mbit", 6, 0.125, true},         {"Gbit", 9, 0.125, true},
    {"Tbit", 12, 0.125, true},        {"B/s", 0, 1.0, false},
    {"KB/s", 3, 1.0, true},           {"MB/s", 6, 1.0, true},
    {"GB/s", 9, 1.0, true},           {"TB/s", 12, 1.0, true},
    {"KiB/s", 0, 1024.0, true},       {"MiB/s", 0, 1048576.0, true},
    {"GiB/s", 0, 1073741824.0, true}, {"TiB/s", 0, 1099511627776.0, true},
};

// Latency prefixes stay case-sensitive: "Ms" would read as mega-seconds.
const Unit kLatencyUnits[] = {
    {"ns", -9, 1.0, false},
    {"us", -6, 1.0, false},
    {"ms", -3, 1.0, false},
    {"s", 0, 1.0, false},
};

// Only the size prefix is case-insensitive ("mbit" as tc writes it); the
// base unit is not, so "b/s" (bits? bytes?) is rejected.
bool unit_matches(std::string written, const Unit& u) {
    const std::string name(u.name);
    // Bit units may carry "/s": "Mbit/s" is "Mbit".
    if (u.factor == 0.125 && written.size() > 2 && written.compare(written.size() - 2, 2, "/s") == 0)
        written.resize(written.size() - 2);
    if (written.size() != name.size()) return false;
    std::size_t start = 0;
    if (u.prefix) {
        if (std::tolower(static_cast<unsigned char>(written[0])) != std::tolower(static_cast<unsigned char>(name[0])))
            return false;
        start = 1;
    }
    return written.compare(start, std::string::npos, name, start, std::string::npos) == 0;
}

// Splits "1.5e3Gbit" into mantissa digits "1.5", exponent 3, unit "Gbit".
bool split_number(const std::string& text, std::string* mantissa, long* exp10, std::string* unit) {
    std::size_t i = 0;
    std::size_t digits = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i, ++digits;
    }
    if (digits == 0) return false;
    *mantissa = text.substr(0, i);
    *exp10 = 0;
    // An exponent needs at least one digit after e[+-]; otherwise the 'e'
    // belongs to the unit (no unit starts with e, so that is an error later).
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        std::size_t j = i + 1;
        if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
        std::size_t k = j;
        while (k < text.size() && std::isdigit(static_cast<unsigned char>(text[k]))) ++k;
        if (k > j && k - j <= 4) {
            *exp10 = std::strtol(text.substr(i + 1, k - i - 1).c_str(), nullptr, 10);
            i = k;
        }
    }
    *unit = text.substr(i);
    return true;
}

template <std::size_t N>
Status parse_with_units(const std::string& text, const Unit (&units)[N], const char* what, const char* unit_list,
                        double* out) {
    std::string mantissa, unit;
    long exp10 = 0;
    const std::string bad = std::string("bad ") + what + " '" + excerpt(text) + "': ";
    if (!split_number(text, &mantissa, &exp10, &unit))
        return Status::invalid(bad + "expected a number with a unit (" + unit_list + ")");
    if (unit.empty()) return Status::invalid(bad + "missing unit (" + unit_list + ")");
    for (const Unit& u : units) {
        if (!unit_matches(unit, u)) continue;
        std::string decimal = mantissa + "e" + std::to_string(exp10 + u.exp10);
        errno = 0;
        double v = std::strtod(decimal.c_str(), nullptr) * u.factor;
        // Subnormal is out of range too: strtod says so for a number that is
        // subnormal itself, not for a normal one that the factor of a bit unit
        // makes subnormal ("3e-308bit"), whose formatted text would not read
        // back.
        if (errno == ERANGE || !std::isfinite(v) || (v != 0 && !std::isnormal(v)))
            return Status::invalid(bad + "out of range");
        *out = v;
        return Status::ok();
    }
    return Status::invalid(bad + "unknown unit '" + excerpt(unit) + "' (" + unit_list + ")");
}

const char kBandwidthList[] = "bit, kbit, Mbit, Gbit, Tbit, B/s, KB/s, MB/s, GB/s, TB/s, KiB/s..TiB/s";
const char kLatencyList[] = "ns, us, ms, s";

// Shortest "<number><unit>" among `names` whose text parses back to exactly
// `value`, preferring numbers >= 1; ties go to the earlier name.  Fixed notation only: "2e+01GB/s"
// would parse, but nobody wants to read it.  Empty if none is exact.
template <std::size_t N, typename Parse>
std::string shortest_exact(double value, std::initializer_list<const char*> names, const Unit (&units)[N],
                           Parse parse) {
    std::string best;
    bool best_fraction = false;
    for (const char* name : names) {
        const Unit* u = nullptr;
        for (const Unit& k : units)
            if (std::string(k.name) == name) u = &k;
        if (u == nullptr) continue;
        double scaled = value / u->factor / std::pow(10.0, u->exp10);
        if (!(scaled < 1e18)) continue;
        for (int decimals = 0; decimals <= 20; ++decimals) {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%.*f", decimals, scaled);
            std::string candidate = std::string(buf) + u->name;
            double back = 0;
            if (parse(candidate, &back).is_ok() && back == value) {
                // "200Mbit" over "0.2Gbit": a unit that makes the number
                // at least 1 wins, then the shorter text.
                bool fraction = scaled < 1;
                if (best.empty() ||
                    std::make_pair(fraction, candidate.size()) < std::make_pair(best_fraction, best.size())) {
                    best = candidate;
                    best_fraction = fraction;
                }
                break;
            }
        }
    }
    return best;
}

std::string trim_number(double v, int prec) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    return buf;
}

}  // namespace

Status parse_bandwidth(const std::string& text, double* bytes_per_second) {
    double v = 0;
    TOPOAR_TRY(parse_with_units(text, kBandwidthUnits, "bandwidth", kBandwidthList, &v));
    if (!(v > 0)) return Status::invalid("bad bandwidth '" + excerpt(text) + "': must be positive");
    *bytes_per_second = v;
    return Status::ok();
}

Status parse_latency(const std::string& text, double* seconds) {
    double v = 0;
    TOPOAR_TRY(parse_with_units(text, kLatencyUnits, "latency", kLatencyList, &v));
    *seconds = v;
    return Status::ok();
}

Status parse_fraction(const std::string& text, double* fraction) {
    std::string t = text;
    while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
    std::size_t b = 0;
    while (b < t.size() && std::isspace(static_cast<unsigned char>(t[b]))) ++b;
    t = t.substr(b);
    double scale = 1;
    if (!t.empty() && t.back() == '%') {
        scale = 0.01;
        t.pop_back();
    }
    if (t.empty()) return Status::invalid("empty value; expected a fraction such as 0.15 or 15%");
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || errno != 0 || !std::isfinite(v))
        return Status::invalid("'" + excerpt(text) + "' is not a number; expected a fraction such as 0.15 or 15%");
    v *= scale;
    if (v < 0 || v >= 1) return Status::invalid("'" + excerpt(text) + "' is outside [0, 1) (0% to under 100%)");
    *fraction = v;
    return Status::ok();
}

std::string format_bandwidth(double bytes_per_second, bool in_bits) {
    std::initializer_list<const char*> bits = {"Gbit", "Mbit", "Tbit", "kbit", "bit"};
    std::initializer_list<const char*> bytes = {"GB/s", "MB/s", "TB/s", "KB/s", "B/s"};
    std::string s = shortest_exact(bytes_per_second, in_bits ? bits : bytes, kBandwidthUnits, parse_bandwidth);
    if (s.empty()) s = shortest_exact(bytes_per_second, in_bits ? bytes : bits, kBandwidthUnits, parse_bandwidth);
    // 17 significant digits always read back exactly; this is for values
    // too small for fixed notation (or ones the parser refuses: 0, inf).
    return s.empty() ? trim_number(bytes_per_second, 17) + "B/s" : s;
}

std::string format_latency(double seconds) {
    std::string s = shortest_exact(seconds, {"us", "ns", "ms", "s"}, kLatencyUnits, parse_latency);
    return s.empty() ? trim_number(seconds, 17) + "s" : s;
}

std::string human_bandwidth(double bytes_per_second, bool in_bits) {
    if (!in_bits) {
        static const struct {
            double scale;
            const char* name;
        } steps[] = {{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "KB/s"}};
        for (const auto& s : steps)
            if (bytes_per_second >= s.scale) return trim_number(bytes_per_second / s.scale, 4) + " " + s.name;
        return trim_number(bytes_per_second, 4) + " B/s";
    }
    double bits = bytes_per_second * 8;
    static const struct {
        double scale;
        const char* name;
    } steps[] = {{1e12, "Tbit/s"}, {1e9, "Gbit/s"}, {1e6, "Mbit/s"}, {1e3, "kbit/s"}};
    for (const auto& s : steps)
        if (bits >= s.scale) return trim_number(bits / s.scale, 4) + " " + s.name;
    return trim_number(bits, 4) + " bit/s";
}

std::string human_latency(double seconds) {
    if (seconds == 0) return "0 us";
    if (seconds >= 1) return trim_number(seconds, 4) + " s";
    if (seconds >= 1e-3) return trim_number(seconds * 1e3, 4) + " ms";
    if (seconds >= 1e-6) return trim_number(seconds * 1e6, 4) + " us";
    return trim_number(seconds * 1e9, 4) + " ns";
}

}  // namespace topoar

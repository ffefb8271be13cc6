// libFuzzer harness: the value parsers (common/core/units.cpp,
// parse_size in common/decide/decision.cpp, the link specs of
// common/topology/device_topology.cpp), as files and MCA parameters use
// them.  Every input goes to each parser.
// Checks: a refused value gets a printable one-line message; an accepted
// one is in range, and what the formatters write for it (format_bandwidth,
// format_latency, format_size: used by to_text) reads back to exactly the
// same value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/units.hpp"
#include "decide/decision.hpp"
#include "fuzz_check.hpp"
#include "topology/device_topology.hpp"

using namespace topoar;
using topoar_fuzz::check_message;
using topoar_fuzz::require;

namespace {

void bandwidth(const std::string& text) {
    double v = 0;
    Status s = parse_bandwidth(text, &v);
    if (!s) return check_message(s);
    require(v > 0 && std::isfinite(v), "parse_bandwidth accepted a value out of range", text);
    for (bool in_bits : {true, false}) {
        const std::string f = format_bandwidth(v, in_bits);
        double back = 0;
        Status b = parse_bandwidth(f, &back);
        require(b.is_ok(), "format_bandwidth wrote what parse_bandwidth refuses: " + b.message(), f);
        require(back == v, "format_bandwidth does not read back exactly", text + " -> " + f);
        (void)human_bandwidth(v, in_bits);
    }
}

void latency(const std::string& text) {
    double v = 0;
    Status s = parse_latency(text, &v);
    if (!s) return check_message(s);
    require(v >= 0 && std::isfinite(v), "parse_latency accepted a value out of range", text);
    const std::string f = format_latency(v);
    double back = 0;
    Status b = parse_latency(f, &back);
    require(b.is_ok(), "format_latency wrote what parse_latency refuses: " + b.message(), f);
    require(back == v, "format_latency does not read back exactly", text + " -> " + f);
    (void)human_latency(v);
}

void fraction(const std::string& text) {
    double v = 0;
    Status s = parse_fraction(text, &v);
    if (!s) return check_message(s);
    require(v >= 0 && v < 1, "parse_fraction accepted a value outside [0, 1)", text);
}

void size(const std::string& text) {
    std::size_t v = 0;
    Status s = parse_size(text, &v);
    if (!s) return check_message(s);
    const std::string f = format_size(v);
    std::size_t back = 0;
    Status b = parse_size(f, &back);
    require(b.is_ok(), "format_size wrote what parse_size refuses: " + b.message(), f);
    require(back == v, "format_size does not read back exactly", text + " -> " + f);
}

void link(const std::string& text) {
    Link l{1e9, 1e-6};
    Status s = parse_link_spec(text, &l);
    if (!s) check_message(s);
    else require(l.bandwidth > 0 && l.latency >= 0, "parse_link_spec accepted a link out of range", text);
    s = parse_gpu_link_class(text, &l);
    if (!s) check_message(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t n) {
    const std::string text(reinterpret_cast<const char*>(data), n);
    bandwidth(text);
    latency(text);
    fraction(text);
    size(text);
    link(text);
    return 0;
}

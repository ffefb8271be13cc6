// libFuzzer harness: the measured network as one rank sends it to the
// others (MeasuredNetwork::from_bytes, engine.cpp's share step) and the
// inference from a probe matrix (infer_network).
// Checks: bytes that read back write back identically and restrict to
// their own hosts unchanged; any matrix (any rates, zeros, NaN and
// infinities included) gives one up-link per host, every rack index in
// range and no rack level with fewer than two racks; the fan-ins it asks
// for are one per rack, inside the receiver's rack, into open hosts (or,
// across the racks, into a host whose fan-in ran before they were known).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_check.hpp"
#include "topology/measured.hpp"

using namespace topoar;
using topoar_fuzz::require;

namespace {

void bytes(const std::string& in) {
    MeasuredNetwork net;
    if (!MeasuredNetwork::from_bytes(in, &net)) return;
    require(net.to_bytes() == in, "from_bytes accepted bytes that do not write back the same");
    MeasuredNetwork same;
    require(net.restrict_to(net.hosts, &same), "restrict_to its own hosts failed");
    (void)net.describe();
    (void)net.digest();
}

void infer(const std::uint8_t* data, std::size_t n) {
    if (n < 1) return;
    const int hosts = 1 + data[0] % 8;
    ProbeMatrix m(hosts);
    std::size_t at = 1;
    auto next = [&]() {
        double v = 0;
        if (n - at >= sizeof v) {
            std::memcpy(&v, data + at, sizeof v);
            at += sizeof v;
        }
        return v;
    };
    for (int i = 0; i < hosts; ++i)
        for (int j = i + 1; j < hosts; ++j) {
            const double bw = next(), lat = next();
            m.set(i, j, bw, lat);
        }
    for (int i = 0; i < hosts; ++i) m.local_bw[static_cast<std::size_t>(i)] = next();
    for (int i = 0; i < hosts; ++i) {
        m.fan_in[static_cast<std::size_t>(i)] = next();
        m.fan_in_from[static_cast<std::size_t>(i)] = next();
    }
    for (int i = 0; i < hosts; ++i) m.fan_in_racks[static_cast<std::size_t>(i)] = next();
    // The fan-ins asked for: one per rack, every host in at most one,
    // senders in the receiver's rack unless the fan-in is alone in its
    // round, none into a host already settled -- except one across the
    // racks into a host whose earlier fan-in ran before racks were known.
    const HostBounds b = host_bounds(m);
    require(b.rate.size() == static_cast<std::size_t>(hosts) && b.exact.size() == b.rate.size() &&
                b.group.size() == b.rate.size(),
            "host_bounds: not one bound per host");
    std::vector<int> busy(static_cast<std::size_t>(hosts), 0);
    const std::vector<FanIn> fan_ins = next_fan_ins(m);
    for (const FanIn& f : fan_ins) {
        require(f.receiver >= 0 && f.receiver < hosts && !b.exact[static_cast<std::size_t>(f.receiver)],
                "next_fan_ins: a receiver out of range or already settled");
        const std::size_t u = static_cast<std::size_t>(f.receiver);
        require(!(m.fan_in[u] > 0) || (f.across && !(m.fan_in_racks[u] > 1)),
                "next_fan_ins: a second fan-in into a host, not across racks first known after its first");
        require(!f.senders.empty() && static_cast<int>(f.senders.size()) <= kMaxFanInSenders,
                "next_fan_ins: no senders or too many");
        ++busy[static_cast<std::size_t>(f.receiver)];
        for (int s : f.senders) {
            require(s >= 0 && s < hosts && s != f.receiver, "next_fan_ins: a sender out of range");
            // From another rack only in a fan-in alone in its round.
            require(fan_ins.size() == 1 ||
                        b.group[static_cast<std::size_t>(s)] == b.group[static_cast<std::size_t>(f.receiver)],
                    "next_fan_ins: a sender outside the receiver's rack beside another fan-in");
            ++busy[static_cast<std::size_t>(s)];
        }
    }
    for (int k : busy) require(k <= 1, "next_fan_ins: a host in two fan-ins of one round");
    std::vector<std::string> names;
    for (int i = 0; i < hosts; ++i) names.push_back("h" + std::to_string(i));
    MeasuredNetwork net;
    if (!infer_network(m, names, &net)) return;
    require(net.host_up.size() == static_cast<std::size_t>(hosts) && net.rack_of.size() == net.host_up.size(),
            "infer_network: not one up-link and rack per host");
    require(net.num_racks() != 1, "infer_network: a rack level with one rack");
    for (int r : net.rack_of) require(r >= -1 && r < net.num_racks(), "infer_network: rack index out of range");
    MeasuredNetwork back;
    require(MeasuredNetwork::from_bytes(net.to_bytes(), &back) && back.to_bytes() == net.to_bytes(),
            "an inferred network does not round-trip through bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t n) {
    bytes(std::string(reinterpret_cast<const char*>(data), n));
    infer(data, n);
    return 0;
}

// probe_nic_bandwidth (nic_probe.hpp).
#include "topology/nic_probe.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace topoar {

namespace {

std::string first_line(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::string line;
    if (in) std::getline(in, line);
    return line;
}

}  // namespace

double probe_nic_bandwidth(const std::string& root) {
    namespace fs = std::filesystem;
    double best = 0;
    std::error_code ec;
    for (fs::directory_iterator it(fs::path(root) / "class" / "net", ec), end; !ec && it != end; it.increment(ec)) {
        const fs::path dev = it->path();
        if (dev.filename() == "lo" || first_line(dev / "operstate") != "up") continue;
        const std::string speed = first_line(dev / "speed");  // Mbit/s; -1 or unreadable: unknown
        char* stop = nullptr;
        const long mbit = std::strtol(speed.c_str(), &stop, 10);
        if (speed.empty() || *stop != '\0' || mbit <= 0) continue;
        best = std::max(best, static_cast<double>(mbit) * 1e6 / 8);
    }
    for (fs::directory_iterator it(fs::path(root) / "class" / "infiniband", ec), end; !ec && it != end;
         it.increment(ec)) {
        std::error_code pec;
        for (fs::directory_iterator port(it->path() / "ports", pec), pend; !pec && port != pend;
             port.increment(pec)) {
            if (first_line(port->path() / "state").find("ACTIVE") == std::string::npos) continue;
            const std::string rate = first_line(port->path() / "rate");  // "100 Gb/sec (4X EDR)"
            char* stop = nullptr;
            const double gbit = std::strtod(rate.c_str(), &stop);
            if (stop == rate.c_str() || gbit <= 0 || rate.find("Gb/sec") == std::string::npos) continue;
            best = std::max(best, gbit * 1e9 / 8);
        }
    }
    return best;
}

double nic_bandwidth_prior() {
    static const double prior = probe_nic_bandwidth();
    return prior;
}

}  // namespace topoar

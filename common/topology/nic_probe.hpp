// topoar engine: what the machine says about its network ports, as a prior
// for the link probes (topology/measured.hpp): the fastest active Ethernet
// or InfiniBand port in sysfs.
#pragma once

#include <string>

namespace topoar {

// Bytes per second of the fastest port that is up: /sys/class/net/*/speed
// (Mbit/s, interfaces other than lo whose operstate is "up") and
// /sys/class/infiniband/*/ports/*/rate ("100 Gb/sec (4X EDR)", ports whose
// state is ACTIVE).  0 when none says.  `root` replaces "/sys" (tests).
double probe_nic_bandwidth(const std::string& root = "/sys");

// probe_nic_bandwidth() of "/sys", read once per process.
double nic_bandwidth_prior();

}  // namespace topoar

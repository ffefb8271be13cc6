// topoar engine: max-min fair sharing of links by flows, the rule the cost
// model's simulation applies at every flow start and end, and the one the
// link probes' inference predicts concurrent probe streams by
// (topology/measured.hpp: infer_racks).
#pragma once

#include <vector>

namespace topoar {

// Max-min fair rates (progressive filling) of flows over links.
// capacity[l] in bytes/s (infinity allowed); flow_links[f] lists the links
// flow f crosses.  A flow crossing no finite link gets infinity.
std::vector<double> max_min_rates(const std::vector<double>& capacity,
                                  const std::vector<std::vector<int>>& flow_links);

}  // namespace topoar

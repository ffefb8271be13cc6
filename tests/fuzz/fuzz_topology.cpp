// libFuzzer harness: topology files (Topology::from_text,
// common/topology/topology_io.cpp; docs/topology-format.md).
//
// Input: a topology file's text.  Checks: a refused file gets a printable
// one-line message; an accepted one is in normal form (ranks 0..P-1, one
// leaf each), to_text() reads back to an equal topology and is a fixed
// point, and the queries the planners use (path_link, describe) run.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "fuzz_check.hpp"
#include "topology/topology.hpp"

using namespace topoar;
using topoar_fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Topology t;
    Status s = Topology::from_text(text, "fuzz.topo", &t);
    if (!s) {
        topoar_fuzz::check_message(s);
        return 0;
    }
    const int p = t.num_ranks();
    require(!t.empty() && p > 0, "an accepted topology without ranks");
    for (int r = 0; r < p; ++r) {
        const TopoNode& leaf = t.node(t.leaf_of_rank(r));
        require(leaf.is_leaf() && leaf.rank == r, "leaf_of_rank(" + std::to_string(r) + ") is not rank's leaf");
    }
    require(t.num_ranks_under(t.root()) == p, "the root does not hold every rank");

    const std::string written = t.to_text();
    Topology back;
    Status b = Topology::from_text(written, "written", &back);
    require(b.is_ok(), "to_text() does not read back: " + b.message(), written);
    require(back == t, "to_text() reads back to a different topology", written);
    require(back.to_text() == written, "to_text() is not a fixed point", written);

    (void)t.path_link(0, p - 1);
    std::ostringstream os;
    describe(t, os);
    return 0;
}

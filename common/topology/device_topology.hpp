// topoar engine: the device-data variant of a topology.
//
// Host buffers move between the ranks of a host through shared memory and
// leave the host through its NIC as the host stack sends them: the links of
// the discovered Topology.  Device buffers (GPU memory, one GPU per rank)
// move differently, over NCCL:
//
//   host topology (as discovered)          device topology (same tree)
//
//        node a   up: host NIC              node a   up: nic x GPUs of a
//       /  |  \                            /  |  \   (one NIC per GPU,
//   socket0  socket1                      0   1   2   GPUDirect RDMA)
//    / \       |                          up: gpu class (NVLink/NVSwitch,
//   0   1      2   up: shared memory            or PCIe), per GPU
//
//   - a rank's up-link becomes its GPU's link to the node's GPU fabric, one
//     per GPU and direction (NVLink through NVSwitch: every GPU reaches every
//     other at its full link speed; two GPUs exchange data over their two
//     edges only, never the node's NICs);
//   - sockets disappear: GPUs reach each other through the fabric, not
//     through the CPUs' inter-socket link;
//   - a node's up-link becomes its NICs for device data: nic (one NIC per
//     GPU, as on a DGX) times the GPUs (ranks) of that node, so a host with
//     8 GPUs has 8 NICs and one with 2 has 2;
//   - racks and spines keep their links (the same switches carry both).
//
// Limits (docs/cost-model.md, "Device data"): the tree has no per-GPU NIC
// vertex, so one GPU sending off the node may use all of the node's NICs in
// the model (NCCL's PXN forwards through NVLink to other GPUs' NICs, a
// single connection usually uses one or two); a rack holding a single host
// of the job was merged into the host's link by the normal form, and that
// uplink is replaced with the host's.
#pragma once

#include <string>

#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// The GPU link classes (per GPU, per direction), and what they stand for.
// Assumptions from vendor data sheets, not measured here (no multi-GPU
// machine was available; docs/cost-model.md "Device data"):
//   nvlink  450 GB/s, 1 us   NVLink 4 through NVSwitch (DGX/HGX H100: 18
//                            links x 25 GB/s per direction and GPU)
//   pcie    50 GB/s, 2 us    PCIe Gen5 x16 (64 GB/s raw per direction, about
//                            50 after encoding and packet overhead)
// The NIC class has no name: BANDWIDTH[,LATENCY] per GPU, e.g. 400Gbit
// (InfiniBand NDR, one ConnectX-7 per GPU on a DGX H100).
Link nvlink_class();
Link pcie_class();

// "BANDWIDTH[,LATENCY]" over *link ("450GB/s,1us"; a bandwidth alone keeps
// the latency), as the coll_topoar_*_link parameters take it.  Errors name
// the bad part, not the parameter.
Status parse_link_spec(const std::string& text, Link* link);
// The same, or a class name: "nvlink", "pcie".
Status parse_gpu_link_class(const std::string& text, Link* link);

// The device-data topology of `host` (above): same vertices, names and rank
// numbers, sockets removed, rank up-links `gpu`, node up-links `nic_per_gpu`
// times the node's ranks, racks and spines as they are.  A topology without
// hosts (ranks under the root) gets `gpu` on every rank.  Bandwidths must be
// positive.
Status device_topology(const Topology& host, const Link& gpu, const Link& nic_per_gpu, Topology* out);
// The same with NICs shared by the GPUs: a node has nics NICs of `nic`
// each (at most one per GPU), so its up-link is nic x min(nics, GPUs); 0
// is one NIC per GPU (the function above).  The cost model's node_nics
// (cost_model.hpp) puts each GPU's flows on its NIC.
Status device_topology(const Topology& host, const Link& gpu, const Link& nic, int nics, Topology* out);

}  // namespace topoar

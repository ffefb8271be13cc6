// topoar engine: the cost model for device data (GPU buffers over NCCL).
// (Its parameters, struct DeviceModel, are part of the engine's
// configuration: config/engine_config.hpp.)
//
// Device buffers run the same Plans as host buffers, but through the device
// executor (exec/device_executor.hpp), over other links:
//
//   links      device_topology() (topology/device_topology.hpp): ranks on
//              the GPU fabric (NVLink class, or PCIe), nodes on one NIC per
//              GPU, racks and spines unchanged;
//   execution  round by round (CostMode::rounds), whole operations
//              (segment_bytes 0): the device executor hands each round to
//              the GPU as one ncclGroupStart..ncclGroupEnd launch, then its
//              reductions, in stream order; it does not segment;
//   overhead   per message gpu_model_overhead (8 us): a grouped NCCL launch
//              and its proxy progress, instead of the TCP BTL's 40 us;
//   reduction  gamma of topoar's device kernels: sum of floats at 2,223 GB/s
//              counting 3 bytes moved per byte reduced (docs/gpu.md, one
//              H100), so 741 GB/s of reduced data;
//   protocol   eager up to 4 MiB: NCCL_BUFFSIZE, the FIFO a sender fills
//              before the receiver's kernel has to drain it.
//
// The link classes and the overhead are engine parameters (config/params.cpp:
// coll_topoar_gpu_link, _gpu_nic_link, _gpu_model_overhead), the rest are
// fixed here.  None of it was measured on a multi-GPU machine: the values
// are assumptions from data sheets and NCCL's defaults (docs/cost-model.md,
// "Device data").
//
// The device table is the host table's construction (default_table.hpp:
// same candidates, margin and tie rule) on the device topology with this
// model, its rules written with mem=cuda; its ladder reaches 32 MiB and its
// step budget is twice the host's (kDeviceTableMaxBytes,
// kDeviceBudgetFactor below).  The engine builds it with
//
//   build_device_default_table(topology_, table_options(cfg_), cfg_.gpu_model,
//                              &device_table_, &device_report_);
#pragma once

#include <cstddef>

#include "config/engine_config.hpp"
#include "decide/decision.hpp"
#include "model/cost_model.hpp"
#include "model/default_table.hpp"
#include "status.hpp"
#include "topology/topology.hpp"

namespace topoar {

// The device topology of a host topology under this model's links.
Status device_topology(const Topology& host, const DeviceModel& m, Topology* out);

// CostParams of the device executor under this model (rounds, whole
// operations, overhead, gamma, eager limit).
CostParams device_cost_params(const DeviceModel& m);

// The device table's ladder reaches at least this far: on NVLink the
// bandwidth regime starts near a few MiB, where the host ladder (2 MiB)
// already stops, and the ranking still changes above (hring and the ring
// take over from the trees at 8-32 MiB on the DGX-like machines).
constexpr std::size_t kDeviceTableMaxBytes = std::size_t(32) << 20;
// ... and its step budget is this many times the host table's (cheaper
// steps: device_model.cpp).
constexpr std::size_t kDeviceBudgetFactor = 2;

// The host table's options (the engine's: table_options(cfg)) turned into
// the device table's: the model replaced by device_cost_params(m), rules
// for mem=cuda, the ladder up to at least kDeviceTableMaxBytes, the step
// budget kDeviceBudgetFactor times larger, the candidates
// device_model_candidates() (the host ones, then nccl_hier); margin kept.
//
// nccl_hier is predicted from its point-to-point equivalent
// (planner_nccl_hier.hpp): each host's NCCL reduce-scatter and all-gather
// as one round of direct messages between the host's GPUs (what NVLink or
// NVSwitch carry in one launch; NCCL's rings pipeline the same bytes), the
// shard plans across hosts exactly as they run.  Not measured on a
// multi-GPU machine either.
DefaultTableOptions device_table_options(const DefaultTableOptions& host_options, const DeviceModel& m);

// The default table for device data: build_default_table on
// device_topology(host) with device_table_options(host_options, m).  Rules
// carry mem=cuda, ranks= and nodes= of the communicator, origin "cost
// model".  A pure function of its arguments, like the host table.
Status build_device_default_table(const Topology& host, const DefaultTableOptions& host_options,
                                  const DeviceModel& m, DecisionTable* out, DefaultTableReport* report = nullptr);

}  // namespace topoar

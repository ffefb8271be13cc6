// The cost model for device data (device_model.hpp).
#include "model/device_model.hpp"

#include "topology/device_topology.hpp"

#include <algorithm>

namespace topoar {

Status device_topology(const Topology& host, const DeviceModel& m, Topology* out) {
    return device_topology(host, m.gpu, m.nic, m.nics, out);
}

CostParams device_cost_params(const DeviceModel& m) {
    CostParams c;
    c.mode = CostMode::rounds;
    c.segment_bytes = 0;
    c.overhead = m.overhead;
    c.message_cpu_share = 0;  // a grouped NCCL launch is not a per-message CPU cost
    c.gamma = m.gamma;
    c.eager_bytes = m.eager_bytes;
    c.node_nics = m.nics;
    c.peer_bandwidth = m.peer_bandwidth;
    c.nic_path_bandwidth = m.nic_path_bandwidth;
    return c;
}

DefaultTableOptions device_table_options(const DefaultTableOptions& host_options, const DeviceModel& m) {
    DefaultTableOptions o = host_options;
    o.model = device_cost_params(m);
    o.mem = MemType::cuda;
    // The host candidates and the device-only ones with a simplicity
    // (nccl_hier: its planner writes the point-to-point equivalent, which
    // this model predicts like any plan).
    o.candidates = device_model_candidates();
    // Plans for device buffers use the device pipelining unit.
    o.plan.pipeline_elems =
        m.pipeline_bytes ? std::max<std::size_t>(1, m.pipeline_bytes / std::max<std::size_t>(1, o.elem_size)) : 0;
    o.max_bytes = std::max(o.max_bytes, kDeviceTableMaxBytes);
    o.full_max_bytes = static_cast<std::size_t>(-1);  // every candidate at every size, as before
    // Round-by-round replay of whole operations costs about half the CPU
    // per step of the dataflow replay (0.3 vs 0.7 us here): twice the
    // steps for about the host table's set-up time.
    o.max_steps *= kDeviceBudgetFactor;
    o.max_total_steps *= kDeviceBudgetFactor;
    return o;
}

Status build_device_default_table(const Topology& host, const DefaultTableOptions& host_options,
                                  const DeviceModel& m, DecisionTable* out, DefaultTableReport* report) {
    Topology dev;
    TOPOAR_TRY(device_topology(host, m, &dev));
    return build_default_table(dev, device_table_options(host_options, m), out, report);
}

}  // namespace topoar

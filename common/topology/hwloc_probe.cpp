#include "topology/hwloc_probe.hpp"

#include <hwloc.h>
#include <sched.h>

#include <mutex>

namespace topoar {

namespace {

// This machine's hwloc topology, loaded once per process at the first
// probe: loading reads sysfs and takes milliseconds (about 4-11 ms on the
// 2-core test machine), which every communicator's set-up paid before.
// The machine does not change while the process runs; its binding may, so
// that is asked on every probe.  A loaded topology may be read by several
// threads at once (hwloc's documented rule: no thread modifies it), and
// the C++ runtime makes the first-use initialisation thread-safe.
class MachineTopology {
public:
    MachineTopology() {
        if (hwloc_topology_init(&topo_) != 0) {
            topo_ = nullptr;
        } else if (hwloc_topology_load(topo_) != 0) {
            hwloc_topology_destroy(topo_);
            topo_ = nullptr;
        }
    }
    ~MachineTopology() {
        if (topo_ != nullptr) hwloc_topology_destroy(topo_);
    }
    MachineTopology(const MachineTopology&) = delete;
    MachineTopology& operator=(const MachineTopology&) = delete;
    hwloc_topology_t get() const { return topo_; }

private:
    hwloc_topology_t topo_ = nullptr;
};

}  // namespace

namespace {

int socket_of_process_binding() {
    static const MachineTopology machine;
    hwloc_topology_t topo = machine.get();
    if (topo == nullptr) return -1;
    int socket = -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    // Flags 0: the binding of the whole process (MPI launchers bind
    // processes, not threads), falling back to the thread where the OS only
    // knows that.
    if (set != nullptr && hwloc_get_cpubind(topo, set, 0) == 0 && !hwloc_bitmap_iszero(set)) {
        // The smallest object containing every CPU we may run on; its package
        // ancestor (or itself) is our socket.  Covering the whole machine on a
        // multi-socket host means "no package", hence -1.
        hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topo, set);
        if (obj != nullptr && obj->type != HWLOC_OBJ_PACKAGE)
            obj = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
        if (obj != nullptr) socket = static_cast<int>(obj->logical_index);
    }
    hwloc_bitmap_free(set);
    return socket;
}

}  // namespace

// hwloc asks every thread of the process for its binding (tens of
// microseconds with Open MPI's threads: most of a short communicator's
// first-call cost, docs/performance.md "Fresh communicators"); the calling
// thread's own mask is one system call.  The answer is kept while that mask
// stays the same, so a process rebound since is asked again.
int probe_socket_of_current_binding() {
    static std::mutex mutex;
    static bool known = false;
    static cpu_set_t seen;
    static int socket = -1;
    cpu_set_t now;
    CPU_ZERO(&now);
    const bool have_mask = sched_getaffinity(0, sizeof now, &now) == 0;
    if (have_mask) {
        std::lock_guard<std::mutex> lock(mutex);
        if (known && CPU_EQUAL(&now, &seen)) return socket;
    }
    const int s = socket_of_process_binding();
    if (have_mask) {
        std::lock_guard<std::mutex> lock(mutex);
        seen = now;
        socket = s;
        known = true;
    }
    return s;
}

}  // namespace topoar

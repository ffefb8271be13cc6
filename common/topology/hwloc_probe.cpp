#include "topology/hwloc_probe.hpp"

#include <hwloc.h>

namespace topoar {

int probe_socket_of_current_binding() {
    hwloc_topology_t topo = nullptr;
    if (hwloc_topology_init(&topo) != 0) return -1;
    int socket = -1;
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    // Flags 0: the binding of the whole process (MPI launchers bind
    // processes, not threads), falling back to the thread where the OS only
    // knows that.
    if (set != nullptr && hwloc_topology_load(topo) == 0 && hwloc_get_cpubind(topo, set, 0) == 0 &&
        !hwloc_bitmap_iszero(set)) {
        // The smallest object containing every CPU we may run on; its package
        // ancestor (or itself) is our socket.  Covering the whole machine on a
        // multi-socket host means "no package", hence -1.
        hwloc_obj_t obj = hwloc_get_obj_covering_cpuset(topo, set);
        if (obj != nullptr && obj->type != HWLOC_OBJ_PACKAGE)
            obj = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, obj);
        if (obj != nullptr) socket = static_cast<int>(obj->logical_index);
    }
    hwloc_bitmap_free(set);
    hwloc_topology_destroy(topo);
    return socket;
}

}  // namespace topoar

// topoar engine: where this process is bound, via hwloc.
#pragma once

namespace topoar {

// The package (socket) that covers this process's CPU binding, as hwloc's
// logical index (0..n-1), or -1 when the process may run on CPUs of more
// than one package (unbound, or bound across sockets), when the machine shows
// no packages, or on any hwloc error.  The machine's topology is loaded at
// the first call (milliseconds) and kept for the process; each call asks
// only for the calling thread's CPU mask, and the process's binding again
// when that mask changed.  Safe to call from several threads at once.
int probe_socket_of_current_binding();

}  // namespace topoar

/*
 * topoar's one version layer: every difference between the Open MPI
 * releases topoar builds against is named here, and the glue uses only
 * these names where the releases differ.
 *
 *   Open MPI 4.1.x  coll framework 2.0.0: int counts; the base copies a
 *                   module's function pointers after enable and calls
 *                   disable (if any) while it releases them.
 *   Open MPI 5.0.x  coll framework 2.4.0: as 4.1 (int counts, the base
 *                   copies), but OMPI_MODULE_DECLSPEC and SIZEOF_BOOL are
 *                   gone; selection accepts only 2.4.0, and a component
 *                   of another version still loads and is silently never
 *                   selected.
 *   Open MPI main   coll framework 3.0.0 (the future 6.0): size_t counts;
 *                   the base copies nothing: a module installs its own
 *                   functions in enable (MCA_COLL_SAVE_API / _INSTALL_API)
 *                   and puts back what it replaced in disable, called in
 *                   the reverse order of enable.
 *
 * The framework version is read from coll.h itself (which of its version
 * macros it defines), so a header set and its libraries cannot disagree
 * with a version number typed somewhere else.  See README.md (supported
 * versions) and tests/compat/.
 */
#ifndef MCA_COLL_TOPOAR_COMPAT_H
#define MCA_COLL_TOPOAR_COMPAT_H

#include "ompi_config.h"

#include <limits.h>

#include "ompi/mca/coll/coll.h"

#if defined(MCA_COLL_BASE_VERSION_3_0_0)
#define MCA_COLL_TOPOAR_BASE_VERSION MCA_COLL_BASE_VERSION_3_0_0
#define MCA_COLL_TOPOAR_API_NAME "coll 3.0.0 (Open MPI main)"
typedef mca_coll_base_component_3_0_0_t mca_coll_topoar_base_component_t;
typedef size_t mca_coll_topoar_count_t;
#define MCA_COLL_TOPOAR_INSTALLS_ITSELF 1
#elif defined(MCA_COLL_BASE_VERSION_2_4_0)
#define MCA_COLL_TOPOAR_BASE_VERSION MCA_COLL_BASE_VERSION_2_4_0
#define MCA_COLL_TOPOAR_API_NAME "coll 2.4.0 (Open MPI 5.0)"
typedef mca_coll_base_component_2_4_0_t mca_coll_topoar_base_component_t;
typedef int mca_coll_topoar_count_t;
#define MCA_COLL_TOPOAR_INSTALLS_ITSELF 0
#elif defined(MCA_COLL_BASE_VERSION_2_0_0)
#define MCA_COLL_TOPOAR_BASE_VERSION MCA_COLL_BASE_VERSION_2_0_0
#define MCA_COLL_TOPOAR_API_NAME "coll 2.0.0 (Open MPI 4.x)"
typedef mca_coll_base_component_2_0_0_t mca_coll_topoar_base_component_t;
typedef int mca_coll_topoar_count_t;
#define MCA_COLL_TOPOAR_INSTALLS_ITSELF 0
#else
#error "topoar: this Open MPI's ompi/mca/coll/coll.h defines none of MCA_COLL_BASE_VERSION_2_0_0 (4.x), _2_4_0 (5.0.x), _3_0_0 (main); see README.md for the supported versions"
#endif

/* The component structure's visibility: Open MPI 5 removed the module
 * variant and exports components with OMPI_DECLSPEC. */
#if defined(OMPI_MODULE_DECLSPEC)
#define MCA_COLL_TOPOAR_DECLSPEC OMPI_MODULE_DECLSPEC
#else
#define MCA_COLL_TOPOAR_DECLSPEC OMPI_DECLSPEC
#endif

/* A count the glue's int arithmetic cannot take (main's size_t counts,
 * MPI_Allreduce_c): such a call goes to the previous module whole.  With
 * int counts nothing is too big (and no always-false comparison is
 * written). */
#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
#define MCA_COLL_TOPOAR_COUNT_TOO_BIG(count) ((count) > (size_t) INT_MAX)
#else
#define MCA_COLL_TOPOAR_COUNT_TOO_BIG(count) 0
#endif

/* sizeof(C++ bool), for MPI_CXX_BOOL: Open MPI 4.1's configure defines
 * SIZEOF_BOOL; 5.0 dropped it, and there MPI_CXX_BOOL is its C bool
 * underneath (OMPI_DATATYPE_MPI_CXX_BOOL is OMPI_DATATYPE_MPI_C_BOOL). */
#if defined(SIZEOF_BOOL)
#define MCA_COLL_TOPOAR_SIZEOF_CXX_BOOL SIZEOF_BOOL
#else
#define MCA_COLL_TOPOAR_SIZEOF_CXX_BOOL sizeof(_Bool)
#endif

/* Taking over a communicator's allreduce (module enable) and giving it
 * back (disable).  On main the module does both itself; before, the base
 * copies the module's coll_allreduce after enable and releases it at
 * communicator destruction, so these do nothing there (and topoar sets no
 * disable function: 4.1's and 5.0's base would call it and then release
 * whichever module the pointer then names). */
/* api: allreduce, iallreduce or allreduce_init. */
#if MCA_COLL_TOPOAR_INSTALLS_ITSELF
#define MCA_COLL_TOPOAR_INSTALL(comm, api, fn, module)                                                \
    MCA_COLL_INSTALL_API(comm, api, fn, module, "topoar")
/* Only if the function is still ours: what enable replaced goes back. */
#define MCA_COLL_TOPOAR_RESTORE(comm, api, module, prev_fn, prev_module)                              \
    do {                                                                                              \
        if ((module) == (comm)->c_coll->coll_##api##_module) {                                        \
            MCA_COLL_INSTALL_API(comm, api, prev_fn, prev_module, "topoar");                          \
        }                                                                                             \
    } while (0)
#else
#define MCA_COLL_TOPOAR_INSTALL(comm, api, fn, module) ((void) 0)
#define MCA_COLL_TOPOAR_RESTORE(comm, api, module, prev_fn, prev_module) ((void) 0)
#endif

#endif /* MCA_COLL_TOPOAR_COMPAT_H */

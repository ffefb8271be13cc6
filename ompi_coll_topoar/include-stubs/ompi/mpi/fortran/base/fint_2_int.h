/*
 * topoar: ompi/op/op.h includes this header, and installed Open MPI trees
 * (Debian's 4.1.4, a `make install` of 5.0) do not ship it.  The glue needs
 * op.h only through ompi/mca/coll/base/coll_base_util.h (the nbc request
 * its nonblocking requests derive from); op.h uses OMPI_INT_2_FINT alone,
 * in an inline function for Fortran operations that topoar never calls.
 * Searched after Open MPI's own directories (-idirafter), so a source tree
 * that has the real header uses it.
 */
#ifndef TOPOAR_STUB_FINT_2_INT_H
#define TOPOAR_STUB_FINT_2_INT_H
#ifndef OMPI_INT_2_FINT
#define OMPI_INT_2_FINT(a) ((MPI_Fint) (a))
#endif
#endif

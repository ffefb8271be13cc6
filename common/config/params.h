/*
 * topoar: the parameter table's rows (config/params.hpp) as the glue
 * registers them, beyond what topoar_param_info (topoar_engine.h) gives:
 * whether a row is the glue's own, where it may be set, and a keyword
 * type's names.  One walk over topoar_param_count() rows registers every
 * coll_topoar_* MCA variable; the engine's rows come first, the glue's
 * own (priority, verbose, the GPU path's) after them and are never handed
 * to the engine.
 *
 * Plain C (no C++), so the Open MPI glue includes it too.
 */
#ifndef TOPOAR_PARAMS_H
#define TOPOAR_PARAMS_H

#ifdef __cplusplus
extern "C" {
#endif

/* A type beyond TOPOAR_PARAM_INT ... TOPOAR_PARAM_ALGORITHM: an int MCA
 * enum of the row's keywords, valued by their index
 * (topoar::ParamType::keyword). */
#define TOPOAR_PARAM_KEYWORD 5

/* Where a variable may be set (topoar::ParamScope; MCA_BASE_VAR_SCOPE_*). */
enum {
    TOPOAR_PARAM_SCOPE_ALL = 0,      /* anywhere, MPI_T included */
    TOPOAR_PARAM_SCOPE_LOCAL = 1,    /* this process only */
    TOPOAR_PARAM_SCOPE_READONLY = 2, /* fixed once registered */
};

typedef struct topoar_param_glue {
    int glue_only;               /* the glue's own: registered, stored by the glue, not the engine's */
    int scope;                   /* TOPOAR_PARAM_SCOPE_* */
    const char *const *keywords; /* TOPOAR_PARAM_KEYWORD: the names of 0, 1, ..., then NULL; else NULL */
    int names_file;              /* the value names a file whose contents count too */
} topoar_param_glue_t;

/* 0 (TOPOAR_OK), or nonzero for an index outside the table. */
int topoar_param_glue(int index, topoar_param_glue_t *out);

#ifdef __cplusplus
}
#endif

#endif

# AX_CXX_COMPILE_STDCXX_17_TOPOAR: make sure $CXX speaks C++17, adding
# -std=c++17 when it needs it.  (Kept small on purpose: we only need 17.)
AC_DEFUN([AX_CXX_COMPILE_STDCXX_17_TOPOAR], [
  AC_MSG_CHECKING([whether $CXX supports C++17])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>
  #if __cplusplus < 201703L
  #error no C++17
  #endif]], [[std::optional<int> x; (void)x;]])],
    [AC_MSG_RESULT([yes])],
    [save_CXX="$CXX"; CXX="$CXX -std=c++17"
     AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <optional>]], [[std::optional<int> x; (void)x;]])],
       [AC_MSG_RESULT([with -std=c++17])],
       [AC_MSG_ERROR([a C++17 compiler is required])])])
])

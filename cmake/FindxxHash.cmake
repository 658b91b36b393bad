# Finds xxHash (Debian: libxxhash-dev), which ships no CMake config.
# Defines xxHash::xxhash. Where only the header is there (a machine with the
# shared library but no -dev package), xxHash is used header-only.
find_path(xxHash_INCLUDE_DIR xxhash.h)
find_library(xxHash_LIBRARY NAMES xxhash)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(xxHash REQUIRED_VARS xxHash_INCLUDE_DIR)
if(xxHash_FOUND AND NOT TARGET xxHash::xxhash)
  if(xxHash_LIBRARY)
    add_library(xxHash::xxhash UNKNOWN IMPORTED)
    set_target_properties(xxHash::xxhash PROPERTIES
      IMPORTED_LOCATION "${xxHash_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${xxHash_INCLUDE_DIR}")
  else()
    add_library(xxHash::xxhash INTERFACE IMPORTED)
    set_target_properties(xxHash::xxhash PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${xxHash_INCLUDE_DIR}"
      INTERFACE_COMPILE_DEFINITIONS "XXH_INLINE_ALL")
    message(STATUS "fusegate: xxHash header only (no libxxhash found)")
  endif()
endif()

# cpp-httplib for `anelm serve`. Debian ships it as a compiled library whose
# pkg-config file carries the build's feature macros (they change the ABI);
# Homebrew ships the header alone.
pkg_check_modules(HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
add_library(anelm::httplib INTERFACE IMPORTED)
if(HTTPLIB_FOUND)
  target_link_libraries(anelm::httplib INTERFACE PkgConfig::HTTPLIB)
else()
  find_path(HTTPLIB_INCLUDE_DIR httplib.h REQUIRED)
  target_include_directories(anelm::httplib INTERFACE ${HTTPLIB_INCLUDE_DIR})
endif()

# anelm_embed_text(TARGET FILE FUNCTION): compiles FILE (relative to src/) into
# TARGET as `std::string_view anelm::server::FUNCTION()`. CMake re-runs when the
# file changes, so the program always holds the current text.
function(anelm_embed_text target file function)
  set(src ${PROJECT_SOURCE_DIR}/src/${file})
  file(READ ${src} text)
  string(FIND "${text}" ")anelm_embedded\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${file}: holds the raw string's closing delimiter")
  endif()
  set(out ${CMAKE_BINARY_DIR}/gen/embed_${function}.cpp)
  file(CONFIGURE OUTPUT ${out} CONTENT "// Written by cmake/anelm_embed.cmake from src/${file}.
#include <string_view>

namespace anelm::server {

std::string_view ${function}() {
    static constexpr char text[] = R\"anelm_embedded(@text@)anelm_embedded\";
    return {text, sizeof text - 1};
}

}  // namespace anelm::server
" @ONLY)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  target_sources(${target} PRIVATE ${out})
endfunction()

// The chat page served at /: chat_page.html, compiled into the program
// (cmake/anelm_embed.cmake writes its definition).
#pragma once

#include <string_view>

namespace anelm::server {

std::string_view chat_page_html();

}  // namespace anelm::server

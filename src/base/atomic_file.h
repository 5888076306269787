// Writing a whole file so that readers never see half of it: the bytes go to
// a temporary name beside the target, which is renamed over it when complete.
#pragma once

#include <string>
#include <string_view>

namespace anelm {

// Throws Error naming the path when any step fails; the temporary is removed.
void write_file_atomic(const std::string& path, std::string_view content);

}  // namespace anelm

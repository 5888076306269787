// Private anonymous memory of a fixed size, aligned for huge pages, which the
// kernel is asked to use. Freshly allocated memory like this streams faster
// than the page cache behind a file mapping on the machines measured in
// bench/README.md, so weights read every token are copied here.
#pragma once

#include <cstddef>

namespace anelm {

class PageBuffer {
public:
    explicit PageBuffer(size_t bytes);  // throws Error when the memory is not available
    ~PageBuffer();
    PageBuffer(const PageBuffer&) = delete;
    PageBuffer& operator=(const PageBuffer&) = delete;

    std::byte* data() const { return data_; }
    size_t size() const { return size_; }

private:
    std::byte* data_ = nullptr;
    size_t size_ = 0;    // as asked for
    size_t mapped_ = 0;  // whole huge pages
};

}  // namespace anelm

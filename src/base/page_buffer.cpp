#include "base/page_buffer.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "base/error.h"

namespace anelm {

namespace {
constexpr size_t huge_page = size_t{2} << 20;
}

PageBuffer::PageBuffer(size_t bytes) : size_(bytes) {
    if (bytes == 0) return;
    mapped_ = (bytes + huge_page - 1) / huge_page * huge_page;
    // Over-allocate by one huge page so the buffer can start on a boundary.
    const size_t reserved = mapped_ + huge_page;
    void* p = ::mmap(nullptr, reserved, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) fail("cannot allocate {} bytes: {}", bytes, std::strerror(errno));
    auto* base = static_cast<std::byte*>(p);
    const size_t skip = (huge_page - reinterpret_cast<uintptr_t>(base) % huge_page) % huge_page;
    if (skip > 0) ::munmap(base, skip);
    ::munmap(base + skip + mapped_, huge_page - skip);
    data_ = base + skip;
#ifdef MADV_HUGEPAGE
    ::madvise(data_, mapped_, MADV_HUGEPAGE);  // a hint: without it the buffer still works
#endif
}

PageBuffer::~PageBuffer() {
    if (data_) ::munmap(data_, mapped_);
}

}  // namespace anelm

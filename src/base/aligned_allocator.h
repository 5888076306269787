// An allocator for std::vector whose storage starts on an Align-byte boundary
// (glibc's malloc gives large blocks 16 bytes past a page, so every 64-byte
// load from them would straddle two cache lines).
#pragma once

#include <cstddef>
#include <new>

namespace anelm {

template <class T, std::size_t Align = 64>
struct AlignedAllocator {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = AlignedAllocator<U, Align>;
    };

    AlignedAllocator() = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept {}

    T* allocate(std::size_t n) {
        return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{Align}));
    }
    void deallocate(T* p, std::size_t) noexcept { ::operator delete (p, std::align_val_t{Align}); }

    template <class U>
    bool operator==(const AlignedAllocator<U, Align>&) const noexcept {
        return true;
    }
};

}  // namespace anelm

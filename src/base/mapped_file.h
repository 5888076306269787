// A read-only memory map of a whole file. Weights are read in place from it
// (the CPU runner copies the ones it streams: runtime/private_weights.h).
#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace anelm {

class MappedFile {
public:
    explicit MappedFile(const std::string& path);  // throws Error naming the path
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    std::span<const std::byte> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }
    bool contains(const std::byte* p) const { return p >= data_ && p < data_ + size_; }
    // Takes the whole pages inside `bytes` out of this process's resident
    // memory, once they have been copied elsewhere; reading them again maps
    // them back from the file. Bytes outside the mapping are left alone.
    void release(std::span<const std::byte> bytes) const;

private:
    std::string path_;
    const std::byte* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace anelm

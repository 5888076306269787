#include "io/safetensors_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/safetensors_format.h"

namespace anelm {

namespace {

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

size_t tensor_bytes(const std::string& path, const TensorSpec& t) {
    size_t n = dtype_size(t.dtype);
    for (int64_t d : t.shape) {
        if (d < 0) fail("{}: tensor {} has negative dimension {}", path, t.name, d);
        if (__builtin_mul_overflow(n, static_cast<size_t>(d), &n))
            fail("{}: tensor {} is too large", path, t.name);
    }
    return n;
}

// The JSON header, padded with spaces so the data starts aligned.
std::string header_json(const std::string& path, const std::vector<TensorSpec>& tensors,
                        const std::vector<size_t>& sizes,
                        const std::map<std::string, std::string>& metadata) {
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::set<std::string_view> seen;
    size_t offset = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const TensorSpec& t = tensors[i];
        if (t.name.empty() || t.name == "__metadata__")
            fail("{}: invalid tensor name \"{}\"", path, t.name);
        if (!seen.insert(t.name).second) fail("{}: tensor {} is listed twice", path, t.name);
        if (t.dtype == DType::count) fail("{}: tensor {} has no dtype", path, t.name);
        header[t.name] = {{"dtype", safetensors::dtype_name(t.dtype)},
                          {"shape", t.shape},
                          {"data_offsets", {offset, offset + sizes[i]}}};
        offset += sizes[i];
    }
    std::string text = header.dump();
    const size_t padded =
        (safetensors::header_length_size + text.size() + safetensors::header_alignment - 1) /
            safetensors::header_alignment * safetensors::header_alignment -
        safetensors::header_length_size;
    text.resize(padded, ' ');
    return text;
}

void write_all(std::FILE* f, const std::string& path, const void* data, size_t n) {
    if (n != 0 && std::fwrite(data, 1, n, f) != n)
        fail("{}: cannot write: {}", path, std::strerror(errno));
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                       const std::function<void(size_t index, std::span<std::byte> out)>& fill,
                       const std::map<std::string, std::string>& metadata) {
    std::vector<size_t> sizes;
    sizes.reserve(tensors.size());
    for (const TensorSpec& t : tensors) sizes.push_back(tensor_bytes(path, t));
    const std::string header = header_json(path, tensors, sizes, metadata);

    clean_up_after_killed_runs(path);
    const std::string tmp = partial_path(path).string();
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(tmp.c_str(), "wb"));
    if (!file) fail("{}: cannot create: {}", tmp, std::strerror(errno));
    try {
        uint8_t length[safetensors::header_length_size];
        for (size_t i = 0; i < sizeof length; ++i)
            length[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
        write_all(file.get(), tmp, length, sizeof length);
        write_all(file.get(), tmp, header.data(), header.size());
        // One buffer, sized for the largest tensor, reused for all of them: files
        // of many gigabytes are written without holding more than one tensor.
        std::vector<std::byte> buffer(
            sizes.empty() ? 0 : *std::max_element(sizes.begin(), sizes.end()));
        for (size_t i = 0; i < tensors.size(); ++i) {
            std::span<std::byte> out(buffer.data(), sizes[i]);
            fill(i, out);
            write_all(file.get(), tmp, out.data(), out.size());
        }
        if (std::fclose(file.release()) != 0)
            fail("{}: cannot write: {}", tmp, std::strerror(errno));
        std::error_code ec;
        std::filesystem::rename(tmp, path, ec);
        if (ec) fail("{}: cannot rename to {}: {}", tmp, path, ec.message());
    } catch (...) {
        file.reset();
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw;
    }
}

}  // namespace anelm

// A small GGUF writer for tests: metadata of every type and tensors of any
// ggml type given as raw bytes, laid out as the format says (version 3,
// little-endian, data aligned to general.alignment or 32).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::test {

class GgufTestWriter {
public:
    // Metadata, in the order added. The type ids are GGUF's.
    void u32(std::string_view key, uint32_t v) { scalar(key, 4, v); }
    void i32(std::string_view key, int32_t v) { scalar(key, 5, v); }
    void f32(std::string_view key, float v) { scalar(key, 6, v); }
    void u64(std::string_view key, uint64_t v) { scalar(key, 10, v); }
    void boolean(std::string_view key, bool v) { scalar(key, 7, static_cast<uint8_t>(v)); }
    void string(std::string_view key, std::string_view v) {
        header_key(key, 8);
        put_string(kv_, v);
    }
    void strings(std::string_view key, const std::vector<std::string>& v) {
        header_key(key, 9);
        put(kv_, uint32_t{8});
        put(kv_, uint64_t{v.size()});
        for (const std::string& s : v) put_string(kv_, s);
    }
    void i32s(std::string_view key, const std::vector<int32_t>& v) { array(key, 5, v); }
    void f32s(std::string_view key, const std::vector<float>& v) { array(key, 6, v); }
    // Raw metadata bytes after the key (a value type and its value), for malformed files.
    void raw(std::string_view key, const std::string& bytes) {
        put_string(kv_, key);
        kv_ += bytes;
        ++n_kv_;
    }

    // A tensor of ggml type `type` with `shape` outermost first and its bytes.
    void tensor(std::string_view name, std::vector<int64_t> shape, uint32_t type,
                std::string bytes) {
        tensors_.push_back({std::string(name), std::move(shape), type, std::move(bytes)});
    }
    void alignment(uint32_t a) {
        alignment_ = a;
        u32("general.alignment", a);
    }

    // The whole file's bytes.
    std::string bytes() const {
        std::string out;
        put(out, uint32_t{0x46554747});
        put(out, uint32_t{3});
        put(out, uint64_t{tensors_.size()});
        put(out, n_kv_);
        out += kv_;
        uint64_t offset = 0;
        std::vector<uint64_t> offsets;
        for (const Tensor& t : tensors_) {
            put_string(out, t.name);
            put(out, static_cast<uint32_t>(t.shape.size()));
            for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
                put(out, static_cast<uint64_t>(*it));
            put(out, t.type);
            put(out, offset);
            offsets.push_back(offset);
            offset = pad(offset + t.bytes.size());
        }
        out.resize(pad(out.size()), '\0');
        const size_t data = out.size();
        for (size_t i = 0; i < tensors_.size(); ++i) {
            out.resize(data + offsets[i], '\0');
            out += tensors_[i].bytes;
        }
        return out;
    }
    void write(const std::string& path) const { std::ofstream(path, std::ios::binary) << bytes(); }

private:
    struct Tensor {
        std::string name;
        std::vector<int64_t> shape;
        uint32_t type;
        std::string bytes;
    };
    template <typename T>
    static void put(std::string& out, T v) {
        char b[sizeof v];
        std::memcpy(b, &v, sizeof v);
        out.append(b, sizeof v);
    }
    static void put_string(std::string& out, std::string_view s) {
        put(out, uint64_t{s.size()});
        out += s;
    }
    void header_key(std::string_view key, uint32_t type) {
        put_string(kv_, key);
        put(kv_, type);
        ++n_kv_;
    }
    template <typename T>
    void scalar(std::string_view key, uint32_t type, T v) {
        header_key(key, type);
        put(kv_, v);
    }
    template <typename T>
    void array(std::string_view key, uint32_t type, const std::vector<T>& v) {
        header_key(key, 9);
        put(kv_, type);
        put(kv_, uint64_t{v.size()});
        for (T x : v) put(kv_, x);
    }
    uint64_t pad(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }

    std::string kv_;
    uint64_t n_kv_ = 0;
    uint32_t alignment_ = 32;
    std::vector<Tensor> tensors_;
};

}  // namespace anelm::test

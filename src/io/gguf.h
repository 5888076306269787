// A GGUF file (versions 2 and 3, little-endian), memory-mapped: its metadata
// and the tensors it describes. Every count, length and offset is checked
// against the file's size while reading, so a corrupt or truncated file is a
// one-line Error naming the key or tensor, never an over-read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"

namespace anelm {

// GGUF's metadata value types, numbered as the format numbers them.
enum class GgufType : uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};

const char* gguf_type_name(GgufType type);

// One metadata value: a scalar, a string, or an array of either (arrays of
// arrays are read and skipped). Strings point into the mapping.
struct GgufValue {
    GgufType type = GgufType::u8;
    GgufType element_type = GgufType::u8;  // arrays only
    uint64_t count = 0;                    // arrays only
    // Scalars: whichever of these the type fills (integers in both when they fit).
    int64_t int_value = 0;
    uint64_t uint_value = 0;
    double float_value = 0;
    std::string_view string_value;
    // Arrays of scalars: the elements' bytes; arrays of strings: the strings.
    const std::byte* array_data = nullptr;
    std::vector<std::string_view> strings;
};

struct GgufTensor {
    std::string name;
    std::vector<int64_t> shape;  // outermost first (GGUF stores the innermost first)
    uint32_t type = 0;           // a GgmlType id (io/ggml_types.h)
    uint64_t offset = 0;         // from the start of the data section
    uint64_t n_bytes = 0;
    const std::byte* data = nullptr;
};

class GgufFile {
public:
    explicit GgufFile(const std::string& path);

    const std::string& path() const { return file_->path(); }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    const std::shared_ptr<const MappedFile>& file() const { return file_; }

    const std::map<std::string, GgufValue, std::less<>>& metadata() const { return metadata_; }
    const GgufValue* find(std::string_view key) const;
    // Typed access. Missing keys give nullopt; a key of the wrong type is an
    // Error naming the key, its type and the expected one.
    std::optional<std::string> find_string(std::string_view key) const;
    std::optional<int64_t> find_int(std::string_view key) const;   // any integer type
    std::optional<double> find_float(std::string_view key) const;  // f32, f64 or an integer
    std::optional<bool> find_bool(std::string_view key) const;
    // Arrays; a missing key gives an empty vector.
    std::vector<std::string_view> strings(std::string_view key) const;
    std::vector<int64_t> ints(std::string_view key) const;
    std::vector<float> floats(std::string_view key) const;
    // As find_*, but a missing key is an Error naming it.
    std::string get_string(std::string_view key) const;
    int64_t get_int(std::string_view key) const;
    double get_float(std::string_view key) const;

    const std::vector<GgufTensor>& tensors() const { return tensors_; }
    const GgufTensor* find_tensor(std::string_view name) const;

private:
    std::shared_ptr<const MappedFile> file_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    std::map<std::string, GgufValue, std::less<>> metadata_;
    std::vector<GgufTensor> tensors_;
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Whether the file at path starts with GGUF's magic.
bool is_gguf_file(const std::string& path);

}  // namespace anelm

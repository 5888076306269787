#include "io/gguf.h"

#include <fmt/ranges.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/error.h"
#include "io/ggml_types.h"

namespace anelm {

namespace {

constexpr uint32_t gguf_magic = 0x46554747;  // "GGUF" read as a little-endian u32
// Limits far above any real file that keep every product below inside 64 bits.
constexpr uint64_t max_dims = 4;
constexpr int64_t max_dim = int64_t{1} << 40;
constexpr uint64_t max_string = uint64_t{1} << 30;

size_t scalar_size(GgufType t) {
    switch (t) {
        case GgufType::u8:
        case GgufType::i8:
        case GgufType::boolean:
            return 1;
        case GgufType::u16:
        case GgufType::i16:
            return 2;
        case GgufType::u32:
        case GgufType::i32:
        case GgufType::f32:
            return 4;
        case GgufType::u64:
        case GgufType::i64:
        case GgufType::f64:
            return 8;
        case GgufType::string:
        case GgufType::array:
            break;
    }
    return 0;
}

template <typename T>
T load(const std::byte* p) {
    T x;
    std::memcpy(&x, p, sizeof x);
    return x;
}

bool is_integer(GgufType t) {
    return scalar_size(t) != 0 && t != GgufType::f32 && t != GgufType::f64 &&
           t != GgufType::boolean;
}

// Reads the file front to back; `what` names the field being read for errors.
class Cursor {
public:
    Cursor(const MappedFile& file) : file_(file) {}

    uint64_t at() const { return at_; }
    uint64_t remaining() const { return file_.size() - at_; }
    const std::byte* here() const { return file_.data() + at_; }

    // Advances over n bytes, failing when they are not all in the file.
    const std::byte* take(uint64_t n, const std::string& what) {
        if (n > file_.size() - at_)
            fail("{}: truncated: {} needs {} bytes at offset {}, the file has {}", file_.path(),
                 what, n, at_, file_.size() - at_);
        const std::byte* p = here();
        at_ += n;
        return p;
    }
    template <typename T>
    T read(const std::string& what) {
        return load<T>(take(sizeof(T), what));
    }
    std::string_view string(const std::string& what) {
        const uint64_t n = read<uint64_t>(what + " (length)");
        if (n > max_string)
            fail("{}: {} is a string of {} bytes, more than the {} allowed", file_.path(), what, n,
                 max_string);
        return {reinterpret_cast<const char*>(take(n, what)), n};
    }

private:
    const MappedFile& file_;
    uint64_t at_ = 0;
};

GgufType read_type(Cursor& in, const std::string& path, const std::string& what) {
    const uint32_t t = in.read<uint32_t>(what + " (type)");
    if (t > static_cast<uint32_t>(GgufType::f64))
        fail("{}: {} has value type {}, which GGUF does not define", path, what, t);
    return static_cast<GgufType>(t);
}

// A scalar of type t at p; integers fill both int_value and uint_value when they fit.
GgufValue scalar_at(GgufType t, const std::byte* p) {
    GgufValue v;
    v.type = t;
    switch (t) {
        case GgufType::u8:
            v.uint_value = load<uint8_t>(p);
            break;
        case GgufType::i8:
            v.int_value = load<int8_t>(p);
            break;
        case GgufType::u16:
            v.uint_value = load<uint16_t>(p);
            break;
        case GgufType::i16:
            v.int_value = load<int16_t>(p);
            break;
        case GgufType::u32:
            v.uint_value = load<uint32_t>(p);
            break;
        case GgufType::i32:
            v.int_value = load<int32_t>(p);
            break;
        case GgufType::u64:
            v.uint_value = load<uint64_t>(p);
            break;
        case GgufType::i64:
            v.int_value = load<int64_t>(p);
            break;
        case GgufType::f32:
            // The shortest decimal that reads back as the same float (1e-6, not
            // 9.99999997e-7): the value the writer meant, as a config says it.
            v.float_value = std::strtod(fmt::format("{}", load<float>(p)).c_str(), nullptr);
            break;
        case GgufType::f64:
            v.float_value = load<double>(p);
            break;
        case GgufType::boolean:
            v.uint_value = load<uint8_t>(p) != 0;
            break;
        case GgufType::string:
        case GgufType::array:
            break;
    }
    // Unsigned values that fit are readable as signed and the other way round.
    if (t == GgufType::u8 || t == GgufType::u16 || t == GgufType::u32 || t == GgufType::u64) {
        if (v.uint_value <= static_cast<uint64_t>(INT64_MAX))
            v.int_value = static_cast<int64_t>(v.uint_value);
    } else if (is_integer(t) && v.int_value >= 0) {
        v.uint_value = static_cast<uint64_t>(v.int_value);
    }
    return v;
}

GgufValue read_value(Cursor& in, const std::string& path, GgufType t, const std::string& what,
                     int depth) {
    if (t != GgufType::string && t != GgufType::array)
        return scalar_at(t, in.take(scalar_size(t), what));
    GgufValue v;
    v.type = t;
    if (t == GgufType::string) {
        v.string_value = in.string(what);
    } else if (t == GgufType::array) {
        if (depth > 1) fail("{}: {} nests arrays more than two deep", path, what);
        v.element_type = read_type(in, path, what + " (element)");
        v.count = in.read<uint64_t>(what + " (count)");
        if (v.element_type == GgufType::string || v.element_type == GgufType::array) {
            // Each element takes at least 8 bytes (a length or a type and count).
            if (v.count > in.remaining() / 8)
                fail("{}: {} claims {} elements", path, what, v.count);
            for (uint64_t i = 0; i < v.count; ++i) {
                const std::string element = fmt::format("{}[{}]", what, i);
                if (v.element_type == GgufType::string)
                    v.strings.push_back(in.string(element));
                else
                    read_value(in, path, GgufType::array, element, depth + 1);
            }
        } else {
            const uint64_t size = scalar_size(v.element_type);
            if (v.count > UINT64_MAX / size) fail("{}: {} claims {} elements", path, what, v.count);
            v.array_data = in.take(v.count * size, what);
        }
    }
    return v;
}

[[noreturn]] void fail_type(const std::string& path, std::string_view key, const GgufValue& v,
                            const char* expected) {
    const std::string type = v.type == GgufType::array
                                 ? fmt::format("an array of {}", gguf_type_name(v.element_type))
                                 : std::string(gguf_type_name(v.type));
    fail("{}: metadata {} is {}, expected {}", path, key, type, expected);
}

uint64_t align_up(uint64_t x, uint64_t a) {
    return (x + a - 1) / a * a;
}

}  // namespace

const char* gguf_type_name(GgufType type) {
    static constexpr const char* names[] = {"u8",   "i8",     "u16",   "i16", "u32", "i32", "f32",
                                            "bool", "string", "array", "u64", "i64", "f64"};
    const auto i = static_cast<uint32_t>(type);
    return i < std::size(names) ? names[i] : "?";
}

bool is_gguf_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    uint32_t magic = 0;
    return in.read(reinterpret_cast<char*>(&magic), 4) && magic == gguf_magic;
}

GgufFile::GgufFile(const std::string& path) : file_(std::make_shared<const MappedFile>(path)) {
    Cursor in(*file_);
    if (in.read<uint32_t>("the magic") != gguf_magic)
        fail("{}: not a GGUF file (no \"GGUF\" magic)", path);
    version_ = in.read<uint32_t>("the version");
    if ((version_ & 0xffff) == 0 && version_ != 0)
        fail("{}: a big-endian GGUF file; only little-endian files are read", path);
    if (version_ != 2 && version_ != 3)
        fail("{}: GGUF version {}; versions 2 and 3 are read", path, version_);
    const uint64_t n_tensors = in.read<uint64_t>("the tensor count");
    const uint64_t n_kv = in.read<uint64_t>("the metadata count");

    for (uint64_t i = 0; i < n_kv; ++i) {
        const std::string key(in.string(fmt::format("metadata key {}", i)));
        const GgufType t = read_type(in, path, "metadata " + key);
        GgufValue v = read_value(in, path, t, "metadata " + key, 0);
        if (!metadata_.emplace(key, std::move(v)).second)
            fail("{}: metadata {} appears twice", path, key);
    }
    if (const auto a = find_int("general.alignment")) {
        if (*a < 1 || *a > 65536 || (*a & (*a - 1)) != 0)
            fail("{}: metadata general.alignment is {}, expected a power of two", path, *a);
        alignment_ = static_cast<uint64_t>(*a);
    }

    // Each tensor info takes at least 8 + 4 + 4 + 8 bytes.
    if (n_tensors > file_->size() / 24)
        fail("{}: the header claims {} tensors, more than the file can describe", path, n_tensors);
    tensors_.reserve(n_tensors);
    for (uint64_t i = 0; i < n_tensors; ++i) {
        GgufTensor t;
        t.name = std::string(in.string(fmt::format("tensor {} (name)", i)));
        const std::string what = "tensor " + t.name;
        const uint32_t n_dims = in.read<uint32_t>(what + " (n_dims)");
        if (n_dims < 1 || n_dims > max_dims)
            fail("{}: {} has {} dimensions, expected 1 .. {}", path, what, n_dims, max_dims);
        std::vector<int64_t> ne(n_dims);
        uint64_t numel = 1;
        for (uint32_t d = 0; d < n_dims; ++d) {
            const uint64_t n = in.read<uint64_t>(what + " (dims)");
            if (n < 1 || n > static_cast<uint64_t>(max_dim) || numel > UINT64_MAX / n / 256)
                fail("{}: {} has dimension {} of size {}", path, what, d, n);
            ne[d] = static_cast<int64_t>(n);
            numel *= n;
        }
        t.shape.assign(ne.rbegin(), ne.rend());
        t.type = in.read<uint32_t>(what + " (type)");
        t.offset = in.read<uint64_t>(what + " (offset)");
        const auto info = ggml_type_info(t.type);
        if (!info) fail("{}: {} has type id {}, which ggml does not define", path, what, t.type);
        if (ne[0] % info->block_elems != 0)
            fail("{}: {} has rows of {} elements, not whole {} blocks of {}", path, what, ne[0],
                 info->name, info->block_elems);
        t.n_bytes = numel / static_cast<uint64_t>(info->block_elems) *
                    static_cast<uint64_t>(info->block_bytes);
        if (t.offset % alignment_ != 0)
            fail("{}: {} starts at data offset {}, not a multiple of the alignment {}", path, what,
                 t.offset, alignment_);
        if (!tensor_index_.emplace(t.name, tensors_.size()).second)
            fail("{}: tensor {} appears twice", path, t.name);
        tensors_.push_back(std::move(t));
    }

    const uint64_t data_start = align_up(in.at(), alignment_);
    if (data_start > file_->size() && !tensors_.empty())
        fail("{}: truncated: the tensor data would start at {}, past the end ({} bytes)", path,
             data_start, file_->size());
    const uint64_t data_size = tensors_.empty() ? 0 : file_->size() - data_start;
    for (GgufTensor& t : tensors_) {
        if (t.offset > data_size || t.n_bytes > data_size - t.offset)
            fail("{}: truncated: tensor {} needs bytes {} .. {} of the data, which has {}", path,
                 t.name, t.offset, t.offset + t.n_bytes, data_size);
        t.data = file_->data() + data_start + t.offset;
    }
}

const GgufValue* GgufFile::find(std::string_view key) const {
    const auto it = metadata_.find(key);
    return it == metadata_.end() ? nullptr : &it->second;
}

std::optional<std::string> GgufFile::find_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufType::string) fail_type(path(), key, *v, "a string");
    return std::string(v->string_value);
}

std::optional<int64_t> GgufFile::find_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (!is_integer(v->type)) fail_type(path(), key, *v, "an integer");
    if (v->type == GgufType::u64 && v->uint_value > static_cast<uint64_t>(INT64_MAX))
        fail("{}: metadata {} is {}, too large", path(), key, v->uint_value);
    return v->int_value;
}

std::optional<double> GgufFile::find_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type == GgufType::f32 || v->type == GgufType::f64) return v->float_value;
    if (is_integer(v->type)) return static_cast<double>(*find_int(key));
    fail_type(path(), key, *v, "a number");
}

std::optional<bool> GgufFile::find_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return std::nullopt;
    if (v->type != GgufType::boolean) fail_type(path(), key, *v, "a bool");
    return v->uint_value != 0;
}

std::vector<std::string_view> GgufFile::strings(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return {};
    if (v->type != GgufType::array || v->element_type != GgufType::string)
        fail_type(path(), key, *v, "an array of strings");
    return v->strings;
}

std::vector<int64_t> GgufFile::ints(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return {};
    if (v->type != GgufType::array || !is_integer(v->element_type))
        fail_type(path(), key, *v, "an array of integers");
    std::vector<int64_t> out(v->count);
    const size_t size = scalar_size(v->element_type);
    for (uint64_t i = 0; i < v->count; ++i) {
        const std::byte* p = v->array_data + i * size;
        const GgufValue e = scalar_at(v->element_type, p);
        if (e.type == GgufType::u64 && e.uint_value > static_cast<uint64_t>(INT64_MAX))
            fail("{}: metadata {}[{}] is {}, too large", path(), key, i, e.uint_value);
        out[i] = e.int_value;
    }
    return out;
}

std::vector<float> GgufFile::floats(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v) return {};
    if (v->type != GgufType::array ||
        (v->element_type != GgufType::f32 && v->element_type != GgufType::f64))
        fail_type(path(), key, *v, "an array of floats");
    std::vector<float> out(v->count);
    for (uint64_t i = 0; i < v->count; ++i) {
        if (v->element_type == GgufType::f32) {
            out[i] = load<float>(v->array_data + i * 4);
        } else {
            out[i] = static_cast<float>(load<double>(v->array_data + i * 8));
        }
    }
    return out;
}

std::string GgufFile::get_string(std::string_view key) const {
    if (auto v = find_string(key)) return *v;
    fail("{}: metadata {} is missing", path(), key);
}

int64_t GgufFile::get_int(std::string_view key) const {
    if (auto v = find_int(key)) return *v;
    fail("{}: metadata {} is missing", path(), key);
}

double GgufFile::get_float(std::string_view key) const {
    if (auto v = find_float(key)) return *v;
    fail("{}: metadata {} is missing", path(), key);
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
    const auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace anelm

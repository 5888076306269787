#include "io/safetensors.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/json_file.h"
#include "io/safetensors_format.h"

namespace anelm {

namespace {

using nlohmann::json;

struct Entry {
    std::string name;
    DType dtype = DType::f32;
    std::vector<int64_t> shape;
    uint64_t begin = 0;  // byte offsets relative to the start of the data
    uint64_t end = 0;
};

[[noreturn]] void fail_entry(const std::string& path, const std::string& name, const char* field,
                             const std::string& what) {
    fail("{}: {} (tensor {}, field {})", path, what, name, field);
}

// A non-negative JSON integer, or an error naming the tensor and field.
uint64_t to_count(const std::string& path, const std::string& name, const char* field,
                  const json& v) {
    if (!v.is_number_integer())
        fail_entry(path, name, field,
                   fmt::format("expected an integer, got {}", json_type_words(v)));
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    const int64_t i = v.get<int64_t>();
    if (i < 0) fail_entry(path, name, field, fmt::format("negative value {}", i));
    return static_cast<uint64_t>(i);
}

const json& require(const std::string& path, const std::string& name, const json& entry,
                    const char* field) {
    auto it = entry.find(field);
    if (it == entry.end()) fail_entry(path, name, field, "missing field");
    return *it;
}

DType parse_dtype(const std::string& path, const std::string& name, const json& v) {
    if (!v.is_string())
        fail_entry(path, name, "dtype",
                   fmt::format("expected a string, got {}", json_type_words(v)));
    const auto& text = v.get_ref<const std::string&>();
    if (auto t = safetensors::dtype_from_name(text)) return *t;
    if (safetensors::dtype_is_known_unsupported(text))
        fail_entry(path, name, "dtype",
                   fmt::format("unsupported dtype {} (anelm reads F32, F16, BF16, I32)", text));
    fail_entry(path, name, "dtype", fmt::format("unknown dtype \"{}\"", text));
}

Entry parse_entry(const std::string& path, const std::string& name, const json& v,
                  uint64_t data_size) {
    if (!v.is_object())
        fail("{}: expected an object, got {} (tensor {})", path, json_type_words(v), name);
    Entry e;
    e.name = name;
    e.dtype = parse_dtype(path, name, require(path, name, v, "dtype"));

    const json& shape = require(path, name, v, "shape");
    if (!shape.is_array())
        fail_entry(path, name, "shape",
                   fmt::format("expected an array, got {}", json_type_words(shape)));
    uint64_t n_bytes = dtype_size(e.dtype);
    // The bytes of the nonzero dimensions too: an empty tensor's other
    // dimensions must still multiply within range wherever shapes are multiplied.
    uint64_t nonzero_bytes = n_bytes;
    for (const json& d : shape) {
        const uint64_t dim = to_count(path, name, "shape", d);
        if (dim > static_cast<uint64_t>(INT64_MAX) ||
            __builtin_mul_overflow(n_bytes, dim, &n_bytes) ||
            __builtin_mul_overflow(nonzero_bytes, std::max<uint64_t>(dim, 1), &nonzero_bytes) ||
            nonzero_bytes > static_cast<uint64_t>(INT64_MAX))
            fail_entry(path, name, "shape", fmt::format("shape {} is too large", shape.dump()));
        e.shape.push_back(static_cast<int64_t>(dim));
    }

    const json& offsets = require(path, name, v, "data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
        fail_entry(path, name, "data_offsets",
                   fmt::format("expected [begin, end], got {}", offsets.dump()));
    e.begin = to_count(path, name, "data_offsets", offsets[0]);
    e.end = to_count(path, name, "data_offsets", offsets[1]);
    if (e.end < e.begin)
        fail_entry(path, name, "data_offsets",
                   fmt::format("end {} is before begin {}", e.end, e.begin));
    if (e.end > data_size)
        fail_entry(path, name, "data_offsets",
                   fmt::format("[{}, {}] runs past the end of the data ({} bytes)", e.begin, e.end,
                               data_size));
    if (e.end - e.begin != n_bytes)
        fail_entry(path, name, "data_offsets",
                   fmt::format("[{}, {}] holds {} bytes, but {} of shape [{}] needs {}", e.begin,
                               e.end, e.end - e.begin, safetensors::dtype_name(e.dtype),
                               fmt::join(e.shape, ", "), n_bytes));
    if (e.begin % dtype_size(e.dtype) != 0)
        fail_entry(path, name, "data_offsets",
                   fmt::format("begin {} is not a multiple of the {}-byte element size", e.begin,
                               dtype_size(e.dtype)));
    return e;
}

// Parses and checks the header; returns the entries sorted by data offset.
std::vector<Entry> parse_header(const MappedFile& file, uint64_t& data_start) {
    const std::string& path = file.path();
    const size_t size = file.size();
    if (size < safetensors::header_length_size)
        fail("{}: file is {} bytes, too short for the 8-byte header length", path, size);
    uint64_t n = 0;
    for (size_t i = 0; i < safetensors::header_length_size; ++i)
        n |= static_cast<uint64_t>(file.data()[i]) << (8 * i);
    if (n > safetensors::header_max_size)
        fail("{}: header length {} is larger than the format's limit of {} bytes", path, n,
             safetensors::header_max_size);
    if (n > size - safetensors::header_length_size)
        fail("{}: header length {} runs past the end of the file ({} bytes)", path, n, size);
    data_start = safetensors::header_length_size + n;
    const uint64_t data_size = size - data_start;

    const auto* chars =
        reinterpret_cast<const char*>(file.data()) + safetensors::header_length_size;
    const json header =
        parse_json(std::string_view(chars, n), path, safetensors::header_length_size);
    if (!header.is_object())
        fail("{}: header is {}, expected a JSON object", path, json_type_words(header));

    std::vector<Entry> entries;
    for (const auto& [name, value] : header.items()) {
        if (name == "__metadata__") {
            if (!value.is_object())
                fail("{}: __metadata__ is {}, expected an object", path, json_type_words(value));
            continue;
        }
        entries.push_back(parse_entry(path, name, value, data_size));
    }

    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    // Gaps between tensors are harmless and tolerated; shared bytes are not.
    const Entry* previous = nullptr;
    for (const Entry& e : entries) {
        if (e.begin == e.end) continue;
        if (previous && e.begin < previous->end)
            fail_entry(path, e.name, "data_offsets",
                       fmt::format("[{}, {}] overlaps tensor {} at [{}, {}]", e.begin, e.end,
                                   previous->name, previous->begin, previous->end));
        previous = &e;
    }
    return entries;
}

}  // namespace

std::vector<std::string> load_safetensors(const std::string& path, WeightStore& store) {
    auto file = std::make_shared<const MappedFile>(path);
    uint64_t data_start = 0;
    const std::vector<Entry> entries = parse_header(*file, data_start);

    // Files from writers that did not pad the header can leave the data
    // misaligned for its element type; those get one aligned copy instead.
    const bool aligned = std::all_of(entries.begin(), entries.end(), [&](const Entry& e) {
        return (data_start + e.begin) % dtype_size(e.dtype) == 0;
    });
    const std::byte* data = file->data() + data_start;
    if (aligned) {
        store.keep_alive(file);
    } else {
        auto copy =
            std::make_shared<const std::vector<std::byte>>(data, file->data() + file->size());
        data = copy->data();
        store.keep_alive(copy);
    }

    std::vector<std::string> names;
    names.reserve(entries.size());
    for (const Entry& e : entries) {
        store.add(e.name, TensorView{e.dtype, e.shape, data + e.begin}, path);
        names.push_back(e.name);
    }
    return names;
}

void load_safetensors_index(const std::string& index_path, WeightStore& store) {
    const json index = read_json_file(index_path);
    if (!index.is_object())
        fail("{}: expected a JSON object, got {}", index_path, json_type_words(index));
    auto it = index.find("weight_map");
    if (it == index.end()) fail("{}: field weight_map: missing", index_path);
    if (!it->is_object() || it->empty())
        fail("{}: field weight_map: expected an object mapping tensor names to files, got {}",
             index_path, it->is_object() ? "an empty object" : json_type_words(*it));

    std::map<std::string, std::vector<std::string>> tensors_by_file;
    for (const auto& [tensor, file] : it->items()) {
        if (!file.is_string() || file.get_ref<const std::string&>().empty())
            fail("{}: field weight_map.{}: expected a file name, got {}", index_path, tensor,
                 file.dump());
        tensors_by_file[file.get<std::string>()].push_back(tensor);
    }

    const std::filesystem::path dir = std::filesystem::path(index_path).parent_path();
    for (const auto& [file, tensors] : tensors_by_file) {
        const std::string shard = (dir / file).string();
        const std::vector<std::string> found = load_safetensors(shard, store);
        const std::set<std::string_view> present(found.begin(), found.end());
        for (const std::string& tensor : tensors)
            if (!present.count(tensor))
                fail("{}: field weight_map.{}: {} has no such tensor", index_path, tensor, shard);
    }
}

}  // namespace anelm

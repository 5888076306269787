#include "io/safetensors.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "base/atomic_file.h"
#include "base/half.h"
#include "io/io_test_util.h"
#include "io/safetensors_writer.h"

namespace anelm {
namespace {

using test::expect_error;
using test::read_file;
using test::write_file;

// A file with the given header text and data bytes; the length field is the
// header's unless `length` overrides it.
std::string safetensors_bytes(const std::string& header, const std::string& data,
                              std::optional<uint64_t> length = std::nullopt) {
    const uint64_t n = length.value_or(header.size());
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + data;
}

template <typename T>
std::vector<T> values_of(const TensorView& view) {
    std::vector<T> out(static_cast<size_t>(view.numel()));
    std::memcpy(out.data(), view.data, view.n_bytes());
    return out;
}

class SafetensorsTest : public test::ScratchDir {
protected:
    // Loads a hand-built file and returns the store.
    WeightStore load_bytes(const std::string& bytes) {
        write_file(path("t.safetensors"), bytes);
        WeightStore store;
        load_safetensors(path("t.safetensors"), store);
        return store;
    }
    void expect_bad(const std::string& bytes, std::initializer_list<std::string_view> parts) {
        write_file(path("t.safetensors"), bytes);
        WeightStore store;
        const std::string file = path("t.safetensors");
        test::expect_message(test::error_of([&] { load_safetensors(file, store); }), file + ": ",
                             parts);
    }
};

TEST_F(SafetensorsTest, RoundTripsEveryDtype) {
    const std::vector<float> f32 = {1.5f, -2.25f, 3e-8f, 65504.0f, -0.0f, 7.0f};
    const std::vector<TensorSpec> specs = {
        {"a.f32", DType::f32, {2, 3}},   {"b.f16", DType::f16, {6}},
        {"c.bf16", DType::bf16, {3, 2}}, {"d.i32", DType::i32, {2}},
        {"e.empty", DType::f32, {0, 4}}, {"f.scalar", DType::f32, {}},
    };
    std::vector<size_t> calls;
    write_safetensors(path("m.safetensors"), specs,
                      [&](size_t i, std::span<std::byte> out) {
                          calls.push_back(i);
                          for (size_t k = 0; k < out.size() / dtype_size(specs[i].dtype); ++k) {
                              std::byte* at = out.data() + k * dtype_size(specs[i].dtype);
                              if (specs[i].dtype == DType::f32) std::memcpy(at, &f32[k], 4);
                              if (specs[i].dtype == DType::f16) {
                                  const uint16_t h = f32_to_f16(f32[k]);
                                  std::memcpy(at, &h, 2);
                              }
                              if (specs[i].dtype == DType::bf16) {
                                  const uint16_t b = f32_to_bf16(f32[k]);
                                  std::memcpy(at, &b, 2);
                              }
                              if (specs[i].dtype == DType::i32) {
                                  const int32_t v = -7 * static_cast<int32_t>(k + 1);
                                  std::memcpy(at, &v, 4);
                              }
                          }
                      },
                      {{"format", "pt"}});
    EXPECT_EQ(calls, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
    EXPECT_FALSE(std::filesystem::exists(partial_path(path("m.safetensors"))));

    // The header is padded so the data starts 8-byte aligned, and records the metadata.
    const std::string raw = read_file(path("m.safetensors"));
    uint64_t n = 0;
    std::memcpy(&n, raw.data(), 8);
    EXPECT_EQ((8 + n) % 8, 0u);
    const auto header = nlohmann::json::parse(raw.substr(8, n));
    EXPECT_EQ(header["__metadata__"]["format"], "pt");
    EXPECT_EQ(header["c.bf16"]["dtype"], "BF16");
    EXPECT_EQ(raw.size(), 8 + n + 6 * 4 + 6 * 2 + 6 * 2 + 2 * 4 + 4);

    WeightStore store;
    const auto names = load_safetensors(path("m.safetensors"), store);
    EXPECT_EQ(names, (std::vector<std::string>{"a.f32", "b.f16", "c.bf16", "d.i32", "e.empty",
                                               "f.scalar"}));
    ASSERT_EQ(store.size(), 6u);
    const TensorView& a = store.get("a.f32", {2, 3});
    EXPECT_EQ(a.dtype, DType::f32);
    EXPECT_EQ(values_of<float>(a), f32);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data) % 8, 0u);

    const TensorView& b = store.get("b.f16", {6});
    EXPECT_EQ(b.dtype, DType::f16);
    const auto halves = values_of<uint16_t>(b);
    for (size_t k = 0; k < f32.size(); ++k) EXPECT_EQ(f16_to_f32(halves[k]), round_to_f16(f32[k]));

    const TensorView& c = store.get("c.bf16", {3, 2});
    EXPECT_EQ(c.dtype, DType::bf16);
    const auto brains = values_of<uint16_t>(c);
    for (size_t k = 0; k < f32.size(); ++k)
        EXPECT_EQ(bf16_to_f32(brains[k]), bf16_to_f32(f32_to_bf16(f32[k])));
    EXPECT_EQ(bf16_to_f32(brains[1]), -2.25f);

    EXPECT_EQ(values_of<int32_t>(store.get("d.i32", {2})), (std::vector<int32_t>{-7, -14}));
    EXPECT_EQ(store.get("e.empty", {0, 4}).n_bytes(), 0u);
    EXPECT_EQ(values_of<float>(store.get("f.scalar", {})), (std::vector<float>{1.5f}));
}

TEST_F(SafetensorsTest, WriterLeavesNothingWhenFillThrows) {
    const std::vector<TensorSpec> specs = {{"a", DType::f32, {4}}, {"b", DType::f32, {4}}};
    EXPECT_THROW(write_safetensors(path("m.safetensors"), specs,
                                   [](size_t i, std::span<std::byte> out) {
                                       if (i == 1) throw std::runtime_error("fill failed");
                                   }),
                 std::runtime_error);
    EXPECT_FALSE(std::filesystem::exists(path("m.safetensors")));
    EXPECT_FALSE(std::filesystem::exists(partial_path(path("m.safetensors"))));
}

TEST_F(SafetensorsTest, WriterRejectsBadSpecs) {
    const auto noop = [](size_t, std::span<std::byte>) {};
    const std::string file = path("m.safetensors");
    expect_error(
        [&] {
            write_safetensors(file, {{"a", DType::f32, {2}}, {"a", DType::f32, {2}}}, noop);
        },
        {file, "tensor a is listed twice"});
    expect_error(
        [&] {
            write_safetensors(file, {{"a", DType::f32, {2, -1}}}, noop);
        },
        {file, "tensor a has negative dimension -1"});
    expect_error(
        [&] {
            write_safetensors(file, {{"", DType::f32, {2}}}, noop);
        },
        {file, "invalid tensor name"});
    EXPECT_FALSE(std::filesystem::exists(file));
}

TEST_F(SafetensorsTest, EmptyFileHasNoTensors) {
    write_safetensors(path("m.safetensors"), {}, [](size_t, std::span<std::byte>) {});
    WeightStore store;
    EXPECT_TRUE(load_safetensors(path("m.safetensors"), store).empty());
    EXPECT_EQ(store.size(), 0u);
}

TEST_F(SafetensorsTest, AcceptsMetadataAndGaps) {
    const std::string header = R"({"__metadata__":{"format":"pt"},)"
                               R"("x":{"dtype":"F32","shape":[1],"data_offsets":[8,12]},)"
                               R"("y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})";
    std::string data(12, '\0');
    const float x = 42.0f;
    std::memcpy(data.data() + 8, &x, 4);
    std::string padded = header + std::string((8 - header.size() % 8) % 8, ' ');
    WeightStore store = load_bytes(safetensors_bytes(padded, data));
    EXPECT_EQ(values_of<float>(store.get("x", {1})), (std::vector<float>{42.0f}));
    EXPECT_EQ(store.get("y", {2}).dtype, DType::f16);
}

TEST_F(SafetensorsTest, CopiesDataLeftMisalignedByAnUnpaddedHeader) {
    std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    if ((8 + header.size()) % 4 == 0) header += " ";  // force a misaligned data start
    std::string data(8, '\0');
    const float v[2] = {3.5f, -1.0f};
    std::memcpy(data.data(), v, 8);
    WeightStore store = load_bytes(safetensors_bytes(header, data));
    const TensorView& x = store.get("x", {2});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(x.data) % alignof(float), 0u);
    EXPECT_EQ(values_of<float>(x), (std::vector<float>{3.5f, -1.0f}));
}

TEST_F(SafetensorsTest, RejectsShortFile) {
    expect_bad("abcde", {"file is 5 bytes, too short for the 8-byte header length"});
}

TEST_F(SafetensorsTest, RejectsHeaderLengthPastEnd) {
    expect_bad(safetensors_bytes("{}", "", 1000),
               {"header length 1000 runs past the end of the file (10 bytes)"});
}

TEST_F(SafetensorsTest, RejectsAbsurdHeaderLength) {
    expect_bad(safetensors_bytes("{}", "", uint64_t{1} << 40),
               {"header length 1099511627776 is larger than the format's limit"});
}

TEST_F(SafetensorsTest, RejectsBadJson) {
    expect_bad(safetensors_bytes(R"({"x": {"dtype": )", ""), {"not valid JSON at byte"});
    expect_bad(safetensors_bytes("[1, 2]", ""), {"header is an array, expected a JSON object"});
    expect_bad(safetensors_bytes(R"({"__metadata__": 3})", ""),
               {"__metadata__ is an integer, expected an object"});
    expect_bad(safetensors_bytes(R"({"x": [1]})", ""),
               {"expected an object, got an array (tensor x)"});
}

TEST_F(SafetensorsTest, RejectsShapesPastRangeEvenWhenEmpty) {
    expect_bad(
        safetensors_bytes(
            R"({"w":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}})",
            ""),
        {"shape [0,4611686018427387904,4611686018427387904] is too large"});
}

TEST_F(SafetensorsTest, RejectsHeadersNestedTooDeep) {
    const std::string deep = std::string(200, '[') + std::string(200, ']');
    expect_bad(safetensors_bytes(R"({"__metadata__":{"x":)" + deep + "}}", ""),
               {"JSON nested more than 128 levels deep at byte 155"});
}

TEST_F(SafetensorsTest, RejectsMissingFields) {
    expect_bad(
        safetensors_bytes(R"({"w":{"shape":[1],"data_offsets":[0,4]}})", std::string(4, '\0')),
        {"missing field (tensor w, field dtype)"});
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", std::string(4, '\0')),
        {"missing field (tensor w, field shape)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1]}})", std::string(4, '\0')),
               {"missing field (tensor w, field data_offsets)"});
}

TEST_F(SafetensorsTest, RejectsUnsupportedAndUnknownDtypes) {
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})",
                                 std::string(8, '\0')),
               {"unsupported dtype F64", "(tensor w, field dtype)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}})",
                                 std::string(1, '\0')),
               {"unsupported dtype F8_E4M3", "(tensor w, field dtype)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"Q4","shape":[1],"data_offsets":[0,1]}})",
                                 std::string(1, '\0')),
               {"unknown dtype \"Q4\" (tensor w, field dtype)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,1]}})",
                                 std::string(1, '\0')),
               {"expected a string, got an integer (tensor w, field dtype)"});
}

TEST_F(SafetensorsTest, RejectsBadShapes) {
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,-2],"data_offsets":[0,0]}})", ""),
        {"negative value -2 (tensor w, field shape)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,0]}})", ""),
               {"expected an integer, got a floating-point number (tensor w, field shape)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F32","shape":4,"data_offsets":[0,16]}})",
                                 std::string(16, '\0')),
               {"expected an array, got an integer (tensor w, field shape)"});
    expect_bad(
        safetensors_bytes(
            R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}})", ""),
        {"is too large (tensor w, field shape)"});
}

TEST_F(SafetensorsTest, RejectsBadOffsets) {
    const std::string data(16, '\0');
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", data),
               {"end 4 is before begin 8 (tensor w, field data_offsets)"});
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[12,20]}})", data),
        {"[12, 20] runs past the end of the data (16 bytes) (tensor w, field data_offsets)"});
    expect_bad(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", data),
               {"holds 8 bytes, but F32 of shape [3] needs 12 (tensor w, field data_offsets)"});
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[2,6]}})", data),
        {"begin 2 is not a multiple of the 4-byte element size (tensor w, field data_offsets)"});
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}})", data),
        {"expected [begin, end], got [0,4,8] (tensor w, field data_offsets)"});
    expect_bad(
        safetensors_bytes(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", data),
        {"negative value -4 (tensor w, field data_offsets)"});
}

TEST_F(SafetensorsTest, RejectsOverlappingTensors) {
    expect_bad(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                 std::string(16, '\0')),
               {"[4, 12] overlaps tensor a at [0, 8] (tensor b, field data_offsets)"});
}

TEST_F(SafetensorsTest, ReportsMissingFile) {
    WeightStore store;
    const std::string file = path("absent.safetensors");
    expect_error([&] { load_safetensors(file, store); }, {file, "cannot open"});
}

// Two shards and their index, as transformers writes them.
class SafetensorsIndexTest : public test::ScratchDir {
protected:
    void write_shard(const std::string& name, const std::vector<TensorSpec>& specs, float base) {
        write_safetensors(path(name), specs, [&](size_t i, std::span<std::byte> out) {
            const float v = base + static_cast<float>(i);
            for (size_t k = 0; k < out.size(); k += 4) std::memcpy(out.data() + k, &v, 4);
        });
    }
    void write_index(const nlohmann::json& weight_map) {
        write_file(
            path("model.safetensors.index.json"),
            nlohmann::json{{"metadata", {{"total_size", 48}}}, {"weight_map", weight_map}}.dump());
    }
    std::string index() const { return path("model.safetensors.index.json"); }
};

TEST_F(SafetensorsIndexTest, LoadsAllShards) {
    write_shard("model-00001-of-00002.safetensors",
                {{"a", DType::f32, {2}}, {"b", DType::f32, {3}}}, 10);
    write_shard("model-00002-of-00002.safetensors", {{"c", DType::f32, {2, 2}}}, 20);
    write_index({{"a", "model-00001-of-00002.safetensors"},
                 {"b", "model-00001-of-00002.safetensors"},
                 {"c", "model-00002-of-00002.safetensors"}});
    WeightStore store;
    load_safetensors_index(index(), store);
    EXPECT_EQ(store.names(), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(values_of<float>(store.get("b", {3})), (std::vector<float>{11, 11, 11}));
    EXPECT_EQ(values_of<float>(store.get("c", {2, 2})), (std::vector<float>{20, 20, 20, 20}));
}

TEST_F(SafetensorsIndexTest, RejectsTensorMissingFromItsShard) {
    write_shard("s1.safetensors", {{"a", DType::f32, {2}}}, 0);
    write_shard("s2.safetensors", {{"c", DType::f32, {2}}}, 0);
    write_index({{"a", "s1.safetensors"}, {"c", "s1.safetensors"}});
    WeightStore store;
    expect_error([&] { load_safetensors_index(index(), store); },
                 {index(), "field weight_map.c", path("s1.safetensors"), "has no such tensor"});
}

TEST_F(SafetensorsIndexTest, RejectsTensorInTwoShards) {
    write_shard("s1.safetensors", {{"a", DType::f32, {2}}}, 0);
    write_shard("s2.safetensors", {{"a", DType::f32, {2}}}, 0);
    write_index({{"a", "s1.safetensors"}, {"b", "s2.safetensors"}});
    WeightStore store;
    expect_error([&] { load_safetensors_index(index(), store); }, {"tensor a is defined twice"});
}

TEST_F(SafetensorsIndexTest, RejectsBadIndex) {
    WeightStore store;
    write_file(index(), R"({"metadata": {}})");
    expect_error([&] { load_safetensors_index(index(), store); },
                 {index(), "field weight_map: missing"});
    write_file(index(), R"({"weight_map": {}})");
    expect_error([&] { load_safetensors_index(index(), store); },
                 {index(), "field weight_map: expected an object", "got an empty object"});
    write_file(index(), R"({"weight_map": {"a": 3}})");
    expect_error([&] { load_safetensors_index(index(), store); },
                 {index(), "field weight_map.a: expected a file name, got 3"});
    write_file(index(), R"({"weight_map": )");
    expect_error([&] { load_safetensors_index(index(), store); }, {index(), "not valid JSON"});
    write_index({{"a", "absent.safetensors"}});
    expect_error([&] { load_safetensors_index(index(), store); },
                 {path("absent.safetensors"), "cannot open"});
}

}  // namespace
}  // namespace anelm

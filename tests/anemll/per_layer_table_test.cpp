// The per-layer table file: 16-bit rows are the table's values rounded to
// half, 8-bit ones within half a step of their group's scale; a file that is
// not one, or is cut short, is refused naming it.
#include "anemll/per_layer_table.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "base/error.h"
#include "base/half.h"
#include "io/io_test_util.h"
#include "test_support.h"

namespace anelm::anemll {
namespace {

struct Table {
    std::vector<float> values;
    TensorView view;
};

Table random_table(int64_t rows, int64_t cols) {
    Table t;
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 0.05f);
    t.values.resize(static_cast<size_t>(rows * cols));
    for (float& v : t.values) v = dist(rng);
    t.values[5] = 0.0f;
    t.view =
        TensorView{DType::f32, {rows, cols}, reinterpret_cast<const std::byte*>(t.values.data())};
    return t;
}

TEST(PerLayerTable, RowsComeBackAtSixteenAndEightBits) {
    const Table t = random_table(7, 24);
    const auto dir = test::temp_dir("per-layer-table");
    const std::vector<int32_t> ids{6, 0, 3, 3};
    for (int bits : {16, 8}) {
        SCOPED_TRACE(bits);
        const std::string path = (dir / fmt::format("t{}.bin", bits)).string();
        write_per_layer_table(path, t.view, bits, 8);
        const PerLayerTable file(path);
        EXPECT_EQ(file.rows(), 7);
        EXPECT_EQ(file.cols(), 24);
        std::vector<float> out(ids.size() * 24);
        file.lookup(ids, out);
        for (size_t i = 0; i < ids.size(); ++i)
            for (size_t c = 0; c < 24; ++c) {
                const float want = t.values[static_cast<size_t>(ids[i]) * 24 + c];
                const float got = out[i * 24 + c];
                if (bits == 16) {
                    EXPECT_EQ(got, round_to_f16(want));
                } else {
                    float peak = 0;  // the group's largest magnitude sets its step
                    for (size_t k = c / 8 * 8; k < c / 8 * 8 + 8; ++k)
                        peak = std::max(peak,
                                        std::abs(t.values[static_cast<size_t>(ids[i]) * 24 + k]));
                    EXPECT_NEAR(got, want, peak / 127 * 0.51 + 1e-6);
                }
            }
        EXPECT_THROW(file.lookup(std::vector<int32_t>{7}, std::span(out).first(24)), Error);
    }
}

TEST(PerLayerTable, RefusesWhatIsNotATable) {
    const Table t = random_table(4, 16);
    const auto dir = test::temp_dir("per-layer-table-bad");
    const std::string good = (dir / "good.bin").string();
    write_per_layer_table(good, t.view, 8, 8);
    EXPECT_THROW(write_per_layer_table((dir / "x.bin").string(), t.view, 4, 8), Error);
    EXPECT_THROW(write_per_layer_table((dir / "x.bin").string(), t.view, 8, 5), Error);

    const auto size = std::filesystem::file_size(good);
    const std::string cut = (dir / "cut.bin").string();
    std::filesystem::copy_file(good, cut);
    std::filesystem::resize_file(cut, size - 3);
    test::expect_error([&] { PerLayerTable{cut}; }, {cut, "bytes of rows"});

    const std::string other = (dir / "other.bin").string();
    std::ofstream(other) << "not a table at all, just text";
    test::expect_error([&] { PerLayerTable{other}; }, {other, "ANELMPLT"});
}

}  // namespace
}  // namespace anelm::anemll

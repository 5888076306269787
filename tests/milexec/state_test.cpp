// States: a KV-cache style update (read_state, slice_update at a runtime
// position, write_state) persists across calls; a value read before a write
// keeps the old contents.
#include <gtest/gtest.h>

#include "base/error.h"
#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F16 = mil::FLOAT16;

// cache [1, 2, 8, 4]: writes x [1, 2, 1, 4] at row `pos`, returns rows 0..2 of
// the updated cache and, when `keep_old`, the sum of the cache before the write.
MilProgram cache_program(bool keep_old) {
    MilProgram p;
    const MilValue x = p.input("x", F16, {1, 2, 1, 4});
    const MilValue pos = p.input("pos", mil::INT32, {1});
    const MilValue cache = p.state("cache", {1, 2, 8, 4});
    const MilValue begin =
        p.b.op("concat", "begin",
               {{"values", std::vector<MilValue>{p.b.const_i32("b0", {2}, {0, 0}), pos,
                                                 p.b.const_i32("b2", {1}, {0})}},
                {"axis", MilParam::i32(0)}},
               mil::INT32, {4});
    const MilValue end =
        p.b.op("add", "end", {{"x", begin}, {"y", MilParam::i32s({1, 2, 1, 4})}}, mil::INT32, {4});
    const MilValue read = p.b.op("read_state", "read", {{"input", cache}}, F16, {1, 2, 8, 4});
    const MilValue upd =
        p.b.op("slice_update", "upd", {{"x", read}, {"update", x}, {"begin", begin}, {"end", end}},
               F16, {1, 2, 8, 4});
    p.b.op_multi("write_state", "write", {{"input", cache}, {"data", upd}}, {});
    const MilValue after = p.b.op("read_state", "after", {{"input", cache}}, F16, {1, 2, 8, 4});
    p.b.output(p.b.op("slice_by_index", "rows",
                      {{"x", after},
                       {"begin", MilParam::i32s({0, 0, 0, 0})},
                       {"end", MilParam::i32s({1, 2, 3, 4})}},
                      F16, {1, 2, 3, 4}));
    if (keep_old) p.b.output(p.b.op("reduce_sum", "old_sum", {{"x", read}}, F16, {}));
    return p;
}

TEST(MilState, UpdatesPersistAcrossCalls) {
    for (const bool keep_old : {false, true}) {
        SCOPED_TRACE(keep_old ? "copying update" : "in-place update");
        MilProgram p = cache_program(keep_old);
        const Function f(p.program, "main", p.blobs);
        ASSERT_EQ(f.states().size(), 1u);
        EXPECT_EQ(f.states()[0].shape, (std::vector<int64_t>{1, 2, 8, 4}));
        States states;
        const std::vector<float> x0 = ramp(8, 0.25f), x1 = ramp(8, 0.125f);
        auto out0 = f.run({{"x", floats(F16, {1, 2, 1, 4}, x0)}, {"pos", ints({1}, {0})}}, states);
        auto out1 = f.run({{"x", floats(F16, {1, 2, 1, 4}, x1)}, {"pos", ints({1}, {1})}}, states);
        const Tensor& cache = states.at("cache");
        for (int h = 0; h < 2; ++h)
            for (int t = 0; t < 8; ++t)
                for (int d = 0; d < 4; ++d) {
                    const float want = t == 0 ? x0[h * 4 + d] : t == 1 ? x1[h * 4 + d] : 0.0f;
                    EXPECT_EQ(cache.f[(h * 8 + t) * 4 + d], want);
                    if (t < 3) {
                        EXPECT_EQ(out1.at("rows").f[(h * 3 + t) * 4 + d], want);
                    }
                }
        if (keep_old) {
            // The second call's read_state saw only the first write.
            float sum = 0;
            for (float v : x0) sum += v;
            EXPECT_NEAR(out1.at("old_sum").f[0], sum, 1e-3);
            EXPECT_EQ(out0.at("old_sum").f[0], 0.0f);
        }
        states.reset();
        for (float v : states.at("cache").f) EXPECT_EQ(v, 0.0f);
    }
}

TEST(MilState, ASliceReadBeforeAWriteKeepsTheOldRows) {
    // Head 1's rows are a contiguous block of the cache, read in place until
    // the in-place update changes the cache under it.
    MilProgram p;
    const MilValue x = p.input("x", F16, {1, 2, 1, 4});
    const MilValue cache = p.state("cache", {1, 2, 8, 4});
    const MilValue read = p.b.op("read_state", "read", {{"input", cache}}, F16, {1, 2, 8, 4});
    const MilValue head = p.b.op("slice_by_index", "head",
                                 {{"x", read},
                                  {"begin", MilParam::i32s({0, 1, 0, 0})},
                                  {"end", MilParam::i32s({1, 2, 8, 4})}},
                                 F16, {1, 1, 8, 4});
    const MilValue upd = p.b.op("slice_update", "upd",
                                {{"x", read},
                                 {"update", x},
                                 {"begin", MilParam::i32s({0, 0, 2, 0})},
                                 {"end", MilParam::i32s({1, 2, 3, 4})}},
                                F16, {1, 2, 8, 4});
    p.b.op_multi("write_state", "write", {{"input", cache}, {"data", upd}}, {});
    p.b.output(p.b.op("reduce_sum", "old_sum", {{"x", head}}, F16, {}));
    const Function f(p.program, "main", p.blobs, Rounding::none);
    States states;
    const std::vector<float> x0 = ramp(8, 0.25f), x1 = ramp(8, 0.125f);
    auto out0 = f.run({{"x", floats(F16, {1, 2, 1, 4}, x0)}}, states);
    auto out1 = f.run({{"x", floats(F16, {1, 2, 1, 4}, x1)}}, states);
    EXPECT_EQ(out0.at("old_sum").f[0], 0.0f);
    float sum = 0;
    for (int d = 0; d < 4; ++d) sum += x0[4 + d];  // head 1's row 2 after the first call
    EXPECT_NEAR(out1.at("old_sum").f[0], sum, 1e-5);
}

TEST(MilState, SharedStatesMustAgreeOnShape) {
    States states;
    states.get("cache", F16, {1, 2, 4, 4});
    MilProgram p = cache_program(false);
    const Function f(p.program, "main", p.blobs);
    EXPECT_THROW(
        f.run({{"x", floats(F16, {1, 2, 1, 4}, ramp(8))}, {"pos", ints({1}, {0})}}, states), Error);
}

}  // namespace
}  // namespace anelm::milexec::test

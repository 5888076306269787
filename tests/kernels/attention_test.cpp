#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "kernels/kernel_testing.h"

namespace anelm::kernels {
namespace {

struct Case {
    int64_t n_tokens, n_head, n_head_kv, head_dim, pos0;
};

// out[t, h, :] = sum_j softmax_j(cap(scale q.k_j)) v_j over the keys j in
// (pos0 + t - window, pos0 + t] (all j <= pos0 + t without a window), in double.
std::vector<float> naive_attention(const AttentionArgs& a) {
    std::vector<float> out(static_cast<size_t>(a.n_tokens * a.n_head * a.head_dim));
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        for (int64_t h = 0; h < a.n_head; ++h) {
            const int64_t kv = h / (a.n_head / a.n_head_kv);
            const float* q = a.q + (t * a.n_head + h) * a.head_dim;
            const int64_t n_keys = a.pos0 + t + 1;
            const int64_t first = a.window > 0 ? std::max<int64_t>(0, n_keys - a.window) : 0;
            std::vector<double> w(static_cast<size_t>(n_keys), -INFINITY);
            double max = -INFINITY, sum = 0.0;
            for (int64_t j = first; j < n_keys; ++j) {
                const uint16_t* k = a.k + (kv * a.n_ctx + j) * a.head_dim;
                double dot = 0.0;
                for (int64_t d = 0; d < a.head_dim; ++d) dot += double{q[d]} * f16_to_f32(k[d]);
                w[j] = dot * a.scale;
                if (a.softcap > 0) w[j] = a.softcap * std::tanh(w[j] / a.softcap);
                max = std::max(max, w[j]);
            }
            for (auto& x : w) sum += (x = std::exp(x - max));
            for (int64_t d = 0; d < a.head_dim; ++d) {
                double acc = 0.0;
                for (int64_t j = 0; j < n_keys; ++j) {
                    acc += w[j] / sum * f16_to_f32(a.v[(kv * a.n_ctx + j) * a.head_dim + d]);
                }
                out[(t * a.n_head + h) * a.head_dim + d] = static_cast<float>(acc);
            }
        }
    }
    return out;
}

// The arguments for a case over q, k, v (kv rows of n_ctx), scale 1/sqrt(head_dim).
AttentionArgs case_args(const Case& c, int64_t n_ctx, const std::vector<float>& q,
                        const std::vector<uint16_t>& k, const std::vector<uint16_t>& v) {
    AttentionArgs a;
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.n_tokens = c.n_tokens;
    a.n_head = c.n_head;
    a.n_head_kv = c.n_head_kv;
    a.head_dim = c.head_dim;
    a.n_ctx = n_ctx;
    a.pos0 = c.pos0;
    a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    return a;
}

// The dispatched kernel and the scalar reference both give `want`.
void expect_both_match(AttentionArgs a, const std::vector<float>& want, ThreadPool& pool,
                       const char* isa) {
    std::vector<float> out(want.size(), NAN), ref_out(want.size(), NAN);
    a.out = out.data();
    attention(a, pool);
    test::expect_close(out, want, 1e-5f, isa);
    a.out = ref_out.data();
    ref::attention(a, pool);
    test::expect_close(ref_out, want, 1e-5f, "ref");
}

TEST(Attention, MatchesTheFormulaWithGqaAndOffsets) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(21);
        const Case cases[] = {
            {1, 1, 1, 8, 0},    {1, 4, 2, 64, 9},  {7, 6, 2, 13, 0}, {5, 6, 3, 32, 4},
            {3, 8, 1, 128, 40}, {9, 2, 2, 17, 2},  {4, 4, 4, 1, 3},  {2, 16, 4, 80, 100},
            {1, 7, 1, 24, 6},   {6, 10, 2, 64, 0},
        };
        for (int n_threads : {1, 2, 3}) {
            ThreadPool pool(n_threads);
            for (const Case& c : cases) {
                const int64_t n_ctx = c.pos0 + c.n_tokens + 3;  // unused slots stay out of sight
                const auto q =
                    test::random_floats(rng, c.n_tokens * c.n_head * c.head_dim, -2.0f, 2.0f);
                const auto k =
                    test::to_f16(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim));
                const auto v =
                    test::to_f16(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim));
                const AttentionArgs a = case_args(c, n_ctx, q, k, v);
                expect_both_match(a, naive_attention(a), pool, isa);
            }
        }
    });
}

TEST(Attention, SlidingWindowAndSoftcapMatchTheFormula) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(22);
        ThreadPool pool(2);
        const Case c{6, 4, 2, 24, 9};
        const int64_t n_ctx = c.pos0 + c.n_tokens;
        const auto q = test::random_floats(rng, c.n_tokens * c.n_head * c.head_dim, -2.0f, 2.0f);
        const auto k = test::to_f16(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim));
        const auto v = test::to_f16(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim));
        for (int64_t window : {0, 1, 3, 8, 100}) {
            for (float softcap : {0.0f, 0.5f}) {
                AttentionArgs a = case_args(c, n_ctx, q, k, v);
                a.scale = 2.0f;  // large scores, so the cap changes them
                a.window = window;
                a.softcap = softcap;
                const auto want = naive_attention(a);
                expect_both_match(a, want, pool, isa);
                std::vector<float> out(q.size(), NAN);
                a.out = out.data();
                // Half-precision scores and probabilities stay close on values in range.
                a.f16_scores = true;
                attention(a, pool);
                test::expect_close(out, want, 1e-2f, "f16 scores");
            }
        }
        // A window of one: each query sees only its own key, so the output is its value.
        std::vector<float> out(q.size());
        AttentionArgs a = case_args(c, n_ctx, q, k, v);
        a.out = out.data();
        a.scale = 1.0f;
        a.window = 1;
        attention(a, pool);
        for (int64_t t = 0; t < c.n_tokens; ++t)
            for (int64_t h = 0; h < c.n_head; ++h)
                for (int64_t d = 0; d < c.head_dim; ++d) {
                    const int64_t kv = h / (c.n_head / c.n_head_kv);
                    ASSERT_FLOAT_EQ(out[(t * c.n_head + h) * c.head_dim + d],
                                    f16_to_f32(v[(kv * n_ctx + c.pos0 + t) * c.head_dim + d]));
                }
    });
}

// The value code q stands for in a row of this scale and zero (bfloat16 bits).
float kv_value(uint16_t scale, uint16_t zero, int8_t q) {
    return bf16_to_f32(zero) + bf16_to_f32(scale) * q;
}

// Caches of f16 rows quantized to int8 ones: the f16 cache holds exactly the values the int8
// rows stand for (zero + scale * q, rounded to half only where they are not already), so the
// formula over the f16 cache is the int8 cache's definition.
struct Int8Cache {
    std::vector<int8_t> rows;
    std::vector<uint16_t> scales, zeros;
    std::vector<uint16_t> as_f16;
    Int8Cache(const std::vector<float>& x, int64_t width)
        : rows(x.size()), scales(x.size() / static_cast<size_t>(width)), zeros(scales.size()) {
        for (size_t r = 0; r < scales.size(); ++r) {
            quantize_kv_row(x.data() + r * width, width, rows.data() + r * width, &scales[r],
                            &zeros[r]);
        }
        std::vector<float> values(x.size());
        for (size_t i = 0; i < x.size(); ++i)
            values[i] = kv_value(scales[i / width], zeros[i / width], rows[i]);
        as_f16 = test::to_f16(values);
    }
};

// Points the call at the int8 rows: values always, keys where k is set.
void read_int8_rows(AttentionArgs& a, const Int8Cache* k, const Int8Cache& v) {
    if (k) {
        a.k = nullptr;
        a.k_i8 = k->rows.data();
        a.k_scales = k->scales.data();
        a.k_zeros = k->zeros.data();
    }
    a.v = nullptr;
    a.v_i8 = v.rows.data();
    a.v_scales = v.scales.data();
    a.v_zeros = v.zeros.data();
}

// How far a leaf over int8 rows may be from the reference, relative to the
// largest output: integer leaves round the query and the softmax weights to
// int16, steps of 1/32767 of the largest of each (observed up to 1.04e-4 in
// these cases, where a few keys give outputs well under their values' range).
constexpr float int8_leaf_tolerance = 2e-4f;

// The reference on the int8 rows near `want` (attention over their f16
// copies), and the active leaf near the reference. Products of int8 and
// scale are rounded to f32 where the f16 copy rounds them to half: the
// tolerance of that one rounding.
void expect_int8_leaf(AttentionArgs& a, const std::vector<float>& want, ThreadPool& pool,
                      const char* isa) {
    std::vector<float> out(want.size(), NAN), ref_out(want.size(), NAN);
    a.out = ref_out.data();
    ref::attention(a, pool);
    test::expect_close(ref_out, want, 2e-3f, "ref");
    a.out = out.data();
    attention(a, pool);
    test::expect_close(out, ref_out, int8_leaf_tolerance, isa);
}

TEST(Attention, Int8RowsMatchTheReferenceAndTheFormula) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(23);
        const Case cases[] = {
            {1, 1, 1, 8, 0},      {1, 4, 2, 64, 9},  {7, 6, 2, 13, 0},    {5, 6, 3, 32, 4},
            {3, 8, 1, 128, 40},   {9, 2, 2, 17, 2},  {2, 16, 4, 80, 100}, {1, 7, 1, 24, 6},
            {1, 16, 2, 128, 300}, {1, 2, 1, 520, 5},  // wider than the integer leaf's room for a
                                                      // rounded query
        };
        for (int n_threads : {1, 3}) {
            ThreadPool pool(n_threads);
            for (const Case& c : cases) {
                const int64_t n_ctx = c.pos0 + c.n_tokens + 3;
                const auto q =
                    test::random_floats(rng, c.n_tokens * c.n_head * c.head_dim, -2.0f, 2.0f);
                const auto kf =
                    test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim, -3.0f, 3.0f);
                const auto vf = test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim);
                const Int8Cache k8(kf, c.head_dim), v8(vf, c.head_dim);
                const auto k16 = test::to_f16(kf);
                for (bool int8_keys : {true, false}) {
                    SCOPED_TRACE(int8_keys ? "q8" : "k16v8");
                    // The formula over f16 rows holding the values the int8 rows stand for.
                    AttentionArgs a =
                        case_args(c, n_ctx, q, int8_keys ? k8.as_f16 : k16, v8.as_f16);
                    const auto want = naive_attention(a);
                    read_int8_rows(a, int8_keys ? &k8 : nullptr, v8);
                    expect_int8_leaf(a, want, pool, isa);
                }
            }
        }
    });
}

// One case's queries (in [-2, 2)) and its cache in every form: keys in [-3, 3) and values in
// the default range, as int8 rows and as f16 rows of the same floats, drawn in that order.
struct CaseRows {
    std::vector<float> q, kf, vf;
    Int8Cache k8, v8;
    std::vector<uint16_t> k16, v16;
    CaseRows(std::mt19937& rng, const Case& c, int64_t n_ctx)
        : q(test::random_floats(rng, c.n_tokens * c.n_head * c.head_dim, -2.0f, 2.0f)),
          kf(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim, -3.0f, 3.0f)),
          vf(test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim)),
          k8(kf, c.head_dim),
          v8(vf, c.head_dim),
          k16(test::to_f16(kf)),
          v16(test::to_f16(vf)) {}

    // The case's call over the cache type kv ("f16", "q8" or "k16v8").
    AttentionArgs args(const Case& c, int64_t n_ctx, std::string_view kv) const {
        AttentionArgs a = case_args(c, n_ctx, q, k16, v16);
        if (kv != "f16") read_int8_rows(a, kv == "q8" ? &k8 : nullptr, v8);
        return a;
    }
};

// The dispatched kernel near the scalar reference: 1e-5 of the largest output on f16 rows,
// the integer leaves' tolerance on int8 ones.
void expect_near_reference(AttentionArgs a, ThreadPool& pool, const char* isa) {
    const size_t n = static_cast<size_t>(a.n_tokens * a.n_head * a.head_dim);
    std::vector<float> out(n, NAN), ref_out(n, NAN);
    a.out = ref_out.data();
    ref::attention(a, pool);
    a.out = out.data();
    attention(a, pool);
    test::expect_close(out, ref_out, a.v_i8 ? int8_leaf_tolerance : 1e-5f, isa);
}

// Decode with few kv heads cuts each query's keys into chunks over the threads; the merged
// chunks give the reference's result for every cache type, window and group size.
TEST(Attention, KeyChunksMergeToTheReference) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(24);
        ThreadPool pool(4);
        const Case cases[] = {
            {1, 4, 1, 64, 1500}, {1, 1, 1, 8, 700},    {2, 16, 2, 128, 1200},
            {3, 3, 1, 24, 900},  {1, 8, 1, 256, 3000}, {1, 6, 2, 40, 2047},
        };
        for (const Case& c : cases) {
            const int64_t n_ctx = c.pos0 + c.n_tokens;
            const CaseRows rows(rng, c, n_ctx);
            for (const char* kv : {"f16", "q8", "k16v8"}) {
                for (int64_t window : {0, 600}) {
                    SCOPED_TRACE(testing::Message() << kv << " pos0 " << c.pos0 << " window "
                                                    << window << " heads " << c.n_head);
                    AttentionArgs a = rows.args(c, n_ctx, kv);
                    a.window = window;
                    ASSERT_GT(attention_key_chunks(a, pool.size()), 1);
                    expect_near_reference(a, pool, isa);
                }
            }
        }
    });
}

// Prompts go in blocks of tokens per kv head: keys every token of a block sees in chunks of 512,
// the causal triangle and a window's leading edge token by token; the merged softmaxes give the
// reference's result for every cache type, window, group size and ragged last block.
TEST(Attention, QueryBlocksMergeToTheReference) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(25);
        ThreadPool pool(2);
        const Case cases[] = {
            {40, 4, 2, 64, 1100},
            {16, 8, 1, 32, 0},
            {33, 6, 3, 24, 600},
            {20, 2, 2, 128, 513},
        };
        for (const Case& c : cases) {
            const int64_t n_ctx = c.pos0 + c.n_tokens;
            const CaseRows rows(rng, c, n_ctx);
            for (const char* kv : {"f16", "q8", "k16v8"}) {
                for (int64_t window : {0, 50, 700}) {
                    SCOPED_TRACE(testing::Message() << kv << " pos0 " << c.pos0 << " tokens "
                                                    << c.n_tokens << " window " << window);
                    AttentionArgs a = rows.args(c, n_ctx, kv);
                    a.window = window;
                    ASSERT_GT(attention_query_block(a, pool.size()), 0);
                    expect_near_reference(a, pool, isa);
                }
            }
        }
    });
}

// n_tokens queries of Qwen3-0.6B's heads (16 over 8 kv heads of 128) after 8192 positions.
AttentionArgs qwen3_at_depth(int64_t n_tokens) {
    AttentionArgs a;
    a.n_tokens = n_tokens;
    a.n_head = 16;
    a.n_head_kv = 8;
    a.head_dim = 128;
    a.n_ctx = 9000;
    a.pos0 = 8192;
    return a;
}

// Blocks take up to 64 tokens, fewer where the blocks would leave a thread idle, none for a few
// tokens or under a window too short for a block's tokens to share keys.
TEST(Attention, QueryBlocksKeepTheThreadsBusy) {
    AttentionArgs a = qwen3_at_depth(512);
    EXPECT_EQ(attention_query_block(a, 2), 64);
    a.n_head = 4;
    a.n_head_kv = 1;
    a.n_tokens = 24;
    EXPECT_EQ(attention_query_block(a, 2), 6);
    a.n_tokens = 15;
    EXPECT_EQ(attention_query_block(a, 2), 0);
    a.n_tokens = 512;
    a.window = 127;
    EXPECT_EQ(attention_query_block(a, 2), 0);
    a.window = 128;
    EXPECT_EQ(attention_query_block(a, 2), 64);
}

// Calls with a group per thread and more keep whole rows of keys per task.
TEST(Attention, KeysStayWholeWithEnoughGroupsOrFewKeys) {
    AttentionArgs a = qwen3_at_depth(1);
    EXPECT_EQ(attention_key_chunks(a, 2), 1);
    a.n_head = 4;
    a.n_head_kv = 1;
    EXPECT_EQ(attention_key_chunks(a, 2), 4);
    a.window = 512;
    EXPECT_EQ(attention_key_chunks(a, 2), 2);
    a.window = 0;
    a.pos0 = 100;
    EXPECT_EQ(attention_key_chunks(a, 2), 1);
}

// Codes count steps from the middle of the row's range: a row 10.5 +- 127/64 has steps of
// 1/64 (where steps from 0 would be 12.48 / 127), a tie rounds to the even code.
TEST(Attention, QuantizedRowsRoundToTheNearestStepFromTheirMiddle) {
    const float step = 1.0f / 64;
    const std::vector<float> x = {10.5f - 127 * step, 10.5f + 127 * step,  10.5f,
                                  10.5f + 0.5f,       10.5f + 1.5f * step, 10.5f - 0.4f * step};
    std::vector<int8_t> q(x.size());
    uint16_t scale = 0, zero = 0;
    quantize_kv_row(x.data(), std::ssize(x), q.data(), &scale, &zero);
    EXPECT_EQ(bf16_to_f32(zero), 10.5f);
    EXPECT_EQ(bf16_to_f32(scale), step);
    EXPECT_EQ(q, (std::vector<int8_t>{-127, 127, 0, 32, 2, 0}));
    const std::vector<float> same(5, -3.0f);
    quantize_kv_row(same.data(), 5, q.data(), &scale, &zero);
    EXPECT_EQ(bf16_to_f32(scale), 0.0f);
    EXPECT_EQ(q[4], 0);
    EXPECT_EQ(kv_value(scale, zero, q[4]), -3.0f);
}

// Rounding the zero and scale to bfloat16 moves no value by more than half a step, and the
// step stays within 1% of the range / 254 plus what the zero's rounding adds.
TEST(Attention, QuantizedRowsStayWithinHalfAStep) {
    std::mt19937 rng(25);
    for (int64_t n : {1, 7, 8, 64, 128, 257}) {
        for (float offset : {0.0f, -3.0f, 40.0f, 1e-3f}) {
            auto x = test::random_floats(rng, n, -1.0f, 1.0f);
            for (float& v : x) v += offset;
            std::vector<int8_t> q(x.size());
            uint16_t scale = 0, zero = 0;
            quantize_kv_row(x.data(), n, q.data(), &scale, &zero);
            const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
            const float step = bf16_to_f32(scale);
            const float zero_moved = std::abs(bf16_to_f32(zero) - (*lo + *hi) / 2);
            EXPECT_LE(step, ((*hi - *lo) / 2 + zero_moved) / 127 * 1.01f) << n << " " << offset;
            for (int64_t i = 0; i < n; ++i)
                ASSERT_LE(std::abs(kv_value(scale, zero, q[i]) - x[i]), step / 2 * 1.0001f)
                    << n << " " << i;
        }
    }
}

// Keys that share an offset (as a head's keys do in their slowly turning rotary pairs) and
// values with one: every leaf adds the rows' zeros as the reference does.
TEST(Attention, Int8RowsWithAnOffsetMatchTheReference) {
    test::for_each_isa([&](const char* isa) {
        std::mt19937 rng(26);
        ThreadPool pool(2);
        const Case cases[] = {{1, 8, 4, 8, 40}, {3, 4, 2, 13, 5}, {1, 16, 8, 128, 200}};
        for (const Case& c : cases) {
            const int64_t n_ctx = c.pos0 + c.n_tokens;
            const auto q =
                test::random_floats(rng, c.n_tokens * c.n_head * c.head_dim, -0.5f, 0.5f);
            auto kf = test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim, -1.0f, 1.0f);
            auto vf = test::random_floats(rng, c.n_head_kv * n_ctx * c.head_dim, -1.0f, 1.0f);
            for (size_t i = 0; i < kf.size(); ++i) {
                kf[i] += i % c.head_dim % 3 == 0 ? 6.0f : -2.0f;
                vf[i] += 3.0f;
            }
            const Int8Cache k8(kf, c.head_dim), v8(vf, c.head_dim);
            AttentionArgs a = case_args(c, n_ctx, q, k8.as_f16, v8.as_f16);
            const auto want = naive_attention(a);
            read_int8_rows(a, &k8, v8);
            expect_int8_leaf(a, want, pool, isa);
        }
    });
}

TEST(Attention, RejectsBadShapes) {
    ThreadPool pool(1);
    AttentionArgs a;
    a.n_tokens = 2;
    a.n_head = 6;
    a.n_head_kv = 4;
    a.head_dim = 8;
    a.n_ctx = 4;
    EXPECT_THROW(attention(a, pool), Error);  // 6 heads over 4 kv heads
    a.n_head_kv = 3;
    a.pos0 = 3;
    EXPECT_THROW(attention(a, pool), Error);  // positions 3..4 past n_ctx 4
    EXPECT_THROW(ref::attention(a, pool), Error);
}

}  // namespace
}  // namespace anelm::kernels

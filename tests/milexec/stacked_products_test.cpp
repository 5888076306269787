// Convs and linears of palettized weights reading one input run as one
// stacked product (CompiledOp::stacked): each output is the product its own op
// gives, value for value, with its bias and its rounding.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "base/half.h"
#include "kernels/quant_kernels.h"
#include "mil_program.h"
#include "quant/quant_testing.h"

namespace anelm::milexec::test {
namespace {

constexpr int64_t n_in = 256;

// A LUT weight as constexpr_lut_to_dense over its CPU matrix's codes and tables.
struct LutWeight {
    quant::QuantizedMatrix q;
    std::shared_ptr<std::vector<uint8_t>> codes, lut;

    LutWeight(std::mt19937& rng, int nbits, int64_t n_out)
        : q(anelm::test::random_quantized(rng, kernels::QuantKind::lut, nbits, n_out, n_in, 8)),
          codes(std::make_shared<std::vector<uint8_t>>(quant::coreml_codes(q))),
          lut(std::make_shared<std::vector<uint8_t>>(q.lut.size() * 2)) {
        std::memcpy(lut->data(), q.lut.data(), lut->size());
    }

    MilValue add(MilProgram& p, const std::string& name, bool conv) const {
        const std::array<int64_t, 4> t = quant::coreml_lut_shape(q);
        const std::vector<int64_t> shape =
            conv ? std::vector<int64_t>{q.n_out, n_in, 1, 1} : std::vector<int64_t>{q.n_out, n_in};
        const std::vector<int64_t> table = conv ? std::vector<int64_t>{t[0], 1, 1, 1, t[2], 1}
                                                : std::vector<int64_t>{t.begin(), t.end()};
        const mil::DataType code_type = q.nbits == 4 ? mil::UINT4 : mil::UINT6;
        return p.b.op_literal(
            "constexpr_lut_to_dense", name,
            {{"indices", coreml::blob_value(p.blobs, code_type, shape, *codes, codes)},
             {"lut", coreml::blob_value(p.blobs, mil::FLOAT16, table, *lut, lut)}},
            mil::FLOAT16, shape);
    }
};

// rows[t] = x at position t of [1, channels, 1, positions].
std::vector<float> token_rows(const std::vector<float>& x, int64_t channels, int64_t positions) {
    std::vector<float> rows(x.size());
    for (int64_t t = 0; t < positions; ++t)
        for (int64_t c = 0; c < channels; ++c) rows[t * channels + c] = x[c * positions + t];
    return rows;
}

TEST(MilStackedProducts, EachOutputIsItsOwnProduct) {
    std::mt19937 rng(5);
    // A query, key and value (LUT4, one with a bias) and a LUT6 head part.
    const std::vector<LutWeight> weights = {{rng, 4, 64}, {rng, 4, 32}, {rng, 4, 32}, {rng, 6, 48}};
    const std::vector<float> bias = ramp(32, 0.0625f);
    ThreadPool pool(2);
    for (const int64_t positions : {1, 5})
        for (const bool conv : {true, false})
            for (const QuantDot dot : {QuantDot::exact, QuantDot::int8})
                for (const Rounding rounding : {Rounding::none, Rounding::f16}) {
                    SCOPED_TRACE(fmt::format("{} positions, {}, {}, {}", positions,
                                             conv ? "conv" : "linear",
                                             dot == QuantDot::int8 ? "int8" : "exact",
                                             rounding == Rounding::f16 ? "f16" : "f32"));
                    const mil::DataType type =
                        rounding == Rounding::f16 ? mil::FLOAT16 : mil::FLOAT32;
                    std::vector<float> xv = ramp(n_in * positions, 0.37f);
                    for (float& v : xv) v = f16_to_f32(f32_to_f16(v));  // as an fp16 input holds it
                    const std::vector<float> rows = conv ? token_rows(xv, n_in, positions) : xv;
                    MilProgram p;
                    const std::vector<int64_t> x_shape =
                        conv ? std::vector<int64_t>{1, n_in, 1, positions}
                             : std::vector<int64_t>{positions, n_in};
                    const MilValue x = p.input("x", type, x_shape);
                    // Another input between the products: it is not stacked with them.
                    const MilValue other = p.input("other", type, x_shape);
                    for (size_t k = 0; k < weights.size(); ++k) {
                        const int64_t n_out = weights[k].q.n_out;
                        const MilValue w = weights[k].add(p, fmt::format("w{}", k), conv);
                        std::vector<MilInput> inputs = {{"x", k == 2 ? other : x}, {"weight", w}};
                        if (k == 1)
                            inputs.push_back({"bias", p.b.const_f16("bias", {n_out}, bias)});
                        p.b.output(p.b.op(conv ? "conv" : "linear", fmt::format("p{}", k), inputs,
                                          type,
                                          conv ? std::vector<int64_t>{1, n_out, 1, positions}
                                               : std::vector<int64_t>{positions, n_out}));
                    }
                    States states;
                    const Function f(p.program, "main", p.blobs, rounding, &pool, dot);
                    EXPECT_EQ(f.stacked_products_planned(), 3);
                    auto out = f.run(
                        {{"x", floats(type, x_shape, xv)}, {"other", floats(type, x_shape, xv)}},
                        states);
                    for (size_t k = 0; k < weights.size(); ++k) {
                        SCOPED_TRACE(fmt::format("product {}", k));
                        quant::QuantizedMatrix cpu = weights[k].q;
                        if (dot == QuantDot::int8) cpu.use_int8_dot();
                        const int64_t n_out = cpu.n_out;
                        std::vector<float> want(static_cast<size_t>(positions * n_out));
                        kernels::quant_matmul(cpu.view(), rows.data(), positions, want.data(),
                                              pool);
                        if (k == 1)
                            for (int64_t t = 0; t < positions; ++t)
                                for (int64_t o = 0; o < n_out; ++o)
                                    want[t * n_out + o] += bias[static_cast<size_t>(o)];
                        if (rounding == Rounding::f16)
                            for (float& v : want) v = f16_to_f32(f32_to_f16(v));
                        std::vector<float> got = out.at(fmt::format("p{}", k)).f;
                        if (conv) got = token_rows(got, n_out, positions);
                        EXPECT_EQ(got, want);
                    }
                }
}

}  // namespace
}  // namespace anelm::milexec::test

// --quant auto: the budget solver against brute force, the target's forms,
// and the search on stories260K's real weights: within its budget, and
// better on held-out text than one width everywhere at the same size.
#include "runtime/quant_search.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <random>

#include "base/error.h"
#include "io/json_file.h"
#include "models/model_loader.h"
#include "runtime/calibration.h"
#include "runtime/held_out_kl.h"
#include "runtime/perplexity.h"
#include "runtime/session.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

TEST(SolveBudget, FindsTheBruteForceOptimumWithinTheBudget) {
    std::mt19937 rng(21);
    std::uniform_int_distribution<int> bits(1000, 30000);
    std::uniform_real_distribution<double> kl(0.0, 1.0);
    for (int trial = 0; trial < 30; ++trial) {
        const size_t n_items = 2 + trial % 4, n_choices = 2 + trial % 3;
        std::vector<BudgetItem> items(n_items);
        for (BudgetItem& item : items)
            for (size_t k = 0; k < n_choices; ++k) {
                item.bits.push_back(bits(rng));
                item.kl.push_back(kl(rng));
            }
        // Budget units of one bit: the programme is exact.
        const double budget = 65536;
        double best = std::numeric_limits<double>::infinity();
        std::vector<size_t> pick(n_items, 0);
        for (;;) {
            double b = 0, k = 0;
            for (size_t i = 0; i < n_items; ++i) b += items[i].bits[pick[i]], k += items[i].kl[pick[i]];
            if (b <= budget) best = std::min(best, k);
            size_t i = 0;
            while (i < n_items && ++pick[i] == n_choices) pick[i++] = 0;
            if (i == n_items) break;
        }
        const std::vector<int> chosen = solve_budget(items, budget);
        if (best == std::numeric_limits<double>::infinity()) {
            EXPECT_TRUE(chosen.empty()) << "trial " << trial;
            continue;
        }
        ASSERT_EQ(chosen.size(), n_items) << "trial " << trial;
        double b = 0, k = 0;
        for (size_t i = 0; i < n_items; ++i) b += items[i].bits[chosen[i]], k += items[i].kl[chosen[i]];
        EXPECT_LE(b, budget) << "trial " << trial;
        EXPECT_NEAR(k, best, 1e-12) << "trial " << trial;
    }
}

TEST(SolveBudget, RefusesABudgetBelowTheCheapestChoices) {
    const std::vector<BudgetItem> items = {{{100, 200}, {1, 0}}, {{100, 300}, {2, 0}}};
    EXPECT_TRUE(solve_budget(items, 199).empty());
    EXPECT_EQ(solve_budget(items, 200), (std::vector<int>{0, 0}));
    EXPECT_EQ(solve_budget(items, 400), (std::vector<int>{0, 1}));  // the larger gain first
    EXPECT_EQ(solve_budget(items, 500), (std::vector<int>{1, 1}));
}

TEST(AutoTarget, ReadsBitsPerWeightOrKlAndRefusesTheRest) {
    EXPECT_FALSE(parse_auto_target("lut4").has_value());
    EXPECT_EQ(parse_auto_target("auto:bpw=4.5")->bits_per_weight, 4.5);
    EXPECT_EQ(parse_auto_target("auto:kl=0.05")->kl, 0.05);
    for (const char* bad : {"auto", "auto:bits=4", "auto:bpw=", "auto:bpw=-1", "auto:kl=x", "auto:bpw=4q"})
        EXPECT_THROW(parse_auto_target(bad), Error) << bad;
}

TEST(StoredBits, CountsCodesTablesAndScales) {
    using quant::QuantMethod;
    EXPECT_EQ(quant::stored_bits({QuantMethod::lut, 4, 8}, 172, 64), 172 * 64 * 4 + 22 * 16 * 16);
    EXPECT_EQ(quant::stored_bits({QuantMethod::lut, 2, 0}, 10, 10), 10 * 10 * 2 + 4 * 16);
    EXPECT_EQ(quant::stored_bits({QuantMethod::int8, 8, 0}, 3, 5), 3 * 5 * 8 + 3 * 16);
    EXPECT_EQ(quant::stored_bits({}, 3, 5), 3 * 5 * 16);
}

const fs::path stories = fs::path(ANELM_SOURCE_DIR) / "models" / "stories260K";
const fs::path texts = fs::path(ANELM_SOURCE_DIR) / "tests" / "data" / "stories260K";

double held_out_kl(const LoadedModel& m, const Tokenizer& tokenizer, const quant::QuantSpec& spec,
                   std::shared_ptr<const quant::ModelCalibration> calib) {
    return test::held_out_kl(m, tokenizer, spec, std::move(calib), 256, 16);
}

TEST(QuantSearch, BeatsOneWidthEverywhereAtTheSameSizeOnUnseenText) {
    const LoadedModel m = load_model((stories / "stories260K.bin").string());
    const auto tokenizer = load_tokenizer((stories / "tok512.bin").string());
    const auto windows =
        calibration_windows((texts / "calibration.txt").string(), *tokenizer, 256, 2048);
    const auto calib = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2);
    const quant::QuantSpec lut4 = quant::parse_quant_spec("lut4");

    // lut4's own size: its choice for every matrix the search counts.
    AutoQuantTarget target;
    target.bits_per_weight = 16.5;
    const AutoQuantResult everything = choose_quantization(m.spec, m.weights, {}, *calib, windows, target, 2);
    double bits = 0, weights = 0;
    for (const MatrixChoice& mc : everything.matrices) {
        const bool head = mc.name.ends_with(":head") || mc.name == "lm_head.weight";
        const auto c = mc.searched ? lut4.choice_for(head ? quant::Component::head : quant::Component::ffn,
                                                     mc.n_out * mc.n_in)
                                   : mc.choice;
        bits += quant::stored_bits(c, mc.n_out, mc.n_in);
        weights += static_cast<double>(mc.n_out * mc.n_in);
    }
    EXPECT_LT(everything.predicted_kl, 1e-9);  // 16 bits: every matrix stays f16
    target.bits_per_weight = bits / weights;
    const AutoQuantResult chosen = choose_quantization(m.spec, m.weights, {}, *calib, windows, target, 2);
    EXPECT_LE(chosen.bits_per_weight, target.bits_per_weight);
    EXPECT_GT(chosen.bits_per_weight, target.bits_per_weight - 0.05);
    EXPECT_GT(chosen.measured_kl, 0.0);
    EXPECT_NEAR(chosen.measured_kl, chosen.predicted_kl, 0.5 * chosen.predicted_kl);

    const double plain = held_out_kl(m, *tokenizer, lut4, calib);
    const double mixed = held_out_kl(m, *tokenizer, chosen.spec, calib);
    EXPECT_LT(mixed, 0.8 * plain) << "lut4 " << plain << ", auto " << mixed;

    // A KL budget: the fewest bits predicted within it, fewer for a looser one.
    AutoQuantTarget tight, loose;
    tight.kl = chosen.predicted_kl;
    loose.kl = 4 * chosen.predicted_kl;
    const AutoQuantResult a = choose_quantization(m.spec, m.weights, {}, *calib, windows, tight, 2);
    const AutoQuantResult b = choose_quantization(m.spec, m.weights, {}, *calib, windows, loose, 2);
    EXPECT_LE(a.predicted_kl, tight.kl * (1 + 1e-9));
    EXPECT_LE(b.predicted_kl, loose.kl * (1 + 1e-9));
    EXPECT_LT(b.bits_per_weight, a.bits_per_weight);
    EXPECT_LE(a.bits_per_weight, chosen.bits_per_weight + 1e-3);
}

}  // namespace
}  // namespace anelm

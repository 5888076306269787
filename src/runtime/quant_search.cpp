#include "runtime/quant_search.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "quant/quant_error.h"
#include "quant/quantize.h"
#include "quant/quantize_program.h"
#include "quant/weight_rows.h"
#include "runtime/perplexity.h"
#include "runtime/runtime_program.h"

namespace anelm {

namespace {

// The width whose KL each matrix is measured at (8 where its rows would not end on a byte).
constexpr int reference_bits = 4;
// Tokens of the window each matrix's KL is measured on: it only scales the
// matrix's output errors, and each run of the model is most of the search.
constexpr int64_t kl_window_tokens = 192;
// Budget units for the dynamic programme.
constexpr int64_t budget_steps = 65536;
// A matrix of more rows than this (a large vocabulary's head) has its
// candidates' errors measured on blocks of rows spread over it, about this
// many rows in all: only the errors' ratios to the reference's are used.
constexpr int64_t sampled_rows = 16384;
// Rows per block of the sample: whole tables of both group sizes.
constexpr int64_t sample_block = 32;

double parse_positive(std::string_view text, std::string_view what) {
    double v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || !(v > 0) || !std::isfinite(v))
        fail("--quant auto:{}{}: expected a positive number", what, text);
    return v;
}

// The model on one window and its f32 rows' probabilities. A matrix's
// KL is measured by running the model again from the first node that reads
// it, on the values the unquantized model had there: a checkpoint that moves
// forward as the search walks the matrices in program order.
class WindowRun {
public:
    WindowRun(const ir::Program& program, ThreadPool& pool, std::span<const int32_t> tokens,
              int64_t n_vocab)
        : executor_(program, pool, Precision::f32),
          pool_(pool),
          tokens_(tokens),
          n_vocab_(n_vocab),
          n_nodes_(program.functions.front().nodes.size()),
          checkpoint_state_(executor_.make_state()) {
        ExecState state = executor_.make_state();
        const auto logits = executor_.run(0, tokens_, 0, state);
        // Each row's probabilities and sum of p log p, so a run's KL per row,
        // sum p (log p - log q), costs one exp per logit (q's log_sum_exp).
        base_p_.resize(logits.size());
        base_p_log_p_.resize(tokens.size());
        base_p_sum_.resize(tokens.size());
        pool_.run(static_cast<int64_t>(tokens.size()), [&](int64_t r, int) {
            const auto in = row(logits, static_cast<size_t>(r));
            const double lse = log_sum_exp(in);
            double p_log_p = 0, p_sum = 0;
            float* p = base_p_.data() + r * n_vocab_;
            for (size_t i = 0; i < in.size(); ++i) {
                const double log_p = in[i] - lse;
                p[i] = static_cast<float>(std::exp(log_p));
                p_log_p += p[i] * log_p;
                p_sum += p[i];
            }
            base_p_log_p_[static_cast<size_t>(r)] = p_log_p;
            base_p_sum_[static_cast<size_t>(r)] = p_sum;
        });
    }

    // Mean KL(f32 || the program as its weights are now) over the window's rows.
    double kl() {
        ExecState state = executor_.make_state();
        return kl_of(executor_.run(0, tokens_, 0, state));
    }

    // The same, where nodes before `first` read no weight changed since the
    // unquantized run; `first` may not go back from one call to the next.
    double kl_from(size_t first) {
        if (first < checkpoint_node_ || first >= n_nodes_)
            fail("quant search: node {} is outside {}..{}", first, checkpoint_node_, n_nodes_);
        if (first > checkpoint_node_) {
            if (checkpoint_node_ > 0) executor_.restore_values(checkpoint_values_);
            executor_.run_nodes(0, tokens_, 0, checkpoint_state_, checkpoint_node_, first);
            checkpoint_values_ = executor_.values();
            checkpoint_node_ = first;
        } else if (checkpoint_node_ > 0) {
            executor_.restore_values(checkpoint_values_);
        }
        ExecState state = checkpoint_state_;
        return kl_of(executor_.run_nodes(0, tokens_, 0, state, first, n_nodes_));
    }

private:
    double kl_of(std::span<const float> logits) {
        std::vector<double> kl(tokens_.size());
        pool_.run(static_cast<int64_t>(tokens_.size()), [&](int64_t r, int) {
            const auto q = row(logits, static_cast<size_t>(r));
            const float* p = base_p_.data() + r * n_vocab_;
            double p_q = 0;
            for (size_t i = 0; i < q.size(); ++i) p_q += static_cast<double>(p[i]) * q[i];
            const auto k = static_cast<size_t>(r);
            kl[k] = base_p_log_p_[k] - p_q + base_p_sum_[k] * log_sum_exp(q);
        });
        double total = 0;
        for (double k : kl) total += std::max(k, 0.0);
        return total / static_cast<double>(tokens_.size());
    }
    std::span<const float> row(std::span<const float> all, size_t r) const {
        return all.subspan(r * static_cast<size_t>(n_vocab_), static_cast<size_t>(n_vocab_));
    }

    Executor executor_;
    ThreadPool& pool_;
    std::span<const int32_t> tokens_;
    int64_t n_vocab_;
    size_t n_nodes_;
    std::vector<float> base_p_;
    std::vector<double> base_p_log_p_, base_p_sum_;
    size_t checkpoint_node_ = 0;
    std::vector<float> checkpoint_values_;
    ExecState checkpoint_state_;
};

// A spec that lists every matrix quantize_program may quantize, the tied
// embedding's two uses apart.
quant::QuantSpec every_matrix(const quant::QuantSpec& base) {
    quant::QuantSpec all = base;
    const quant::QuantChoice lut4{quant::QuantMethod::lut, 4, quant::default_group_size};
    const quant::QuantChoice lut6{quant::QuantMethod::lut, 6, quant::default_group_size};
    if (all.embed.method == quant::QuantMethod::none) all.embed = lut4;
    all.head = all.embed == lut6 ? lut4 : lut6;
    all.ffn = lut4;
    all.min_elements = 0;
    all.per_weight.clear();
    return all;
}

// Whether auto chooses the width of a job's weight, or the spec fixes it.
bool is_searched(const ir::Program& program, const quant::WeightJob& job,
                 const quant::QuantSpec& base) {
    return job.component != quant::Component::embed &&
           program.weights[job.weight].view.numel() >= base.min_elements;
}

// The bits a weight the spec fixes takes.
quant::QuantChoice fixed_choice(const ir::Program& program, const quant::WeightJob& job,
                                const quant::QuantSpec& base) {
    return job.component == quant::Component::embed
               ? base.choice_for(quant::Component::embed, program.weights[job.weight].view.numel())
               : quant::QuantChoice{};
}

// The rows the candidates of `w` are measured on: w itself, or for a matrix
// of more than twice sampled_rows rows every k-th block of sample_block rows,
// as f32.
struct RowSample {
    std::vector<float> values;
    TensorView view;
};

RowSample candidate_rows(const TensorView& w) {
    const quant::MatrixShape shape = quant::matrix_shape(w);
    const int64_t every = shape.n_out / sampled_rows;
    if (every < 2) return {{}, w};
    RowSample sample;
    int64_t rows = 0;
    for (int64_t block = 0; block * sample_block < shape.n_out; block += every) {
        const int64_t end = std::min(shape.n_out, (block + 1) * sample_block);
        for (int64_t o = block * sample_block; o < end; ++o, ++rows) {
            sample.values.resize(static_cast<size_t>((rows + 1) * shape.n_in));
            quant::read_row(w, shape, o, sample.values.data() + rows * shape.n_in);
        }
    }
    sample.view = {
        DType::f32, {rows, shape.n_in}, reinterpret_cast<const std::byte*>(sample.values.data())};
    return sample;
}

// Core ML's packages need each row's codes to end on a byte.
bool packable(const quant::QuantChoice& c, int64_t n_in) {
    return c.method == quant::QuantMethod::none || n_in * c.nbits % 8 == 0;
}

// The bits per weight of auto's narrowest choice: the weights it does not
// search as the spec has them, the others at their narrowest candidate.
double narrowest_bits(const ir::Program& program, const std::vector<quant::WeightJob>& jobs,
                      const quant::QuantSpec& base) {
    double bits = 0, total = 0;
    for (const quant::WeightJob& job : jobs) {
        const TensorView& v = program.weights[job.weight].view;
        const int64_t n_out = v.shape[0], n_in = v.numel() / n_out;
        total += static_cast<double>(v.numel());
        if (!is_searched(program, job, base)) {
            bits += quant::stored_bits(fixed_choice(program, job, base), n_out, n_in);
            continue;
        }
        double least = std::numeric_limits<double>::infinity();
        for (const quant::QuantChoice& c : auto_candidates())
            if (packable(c, n_in)) least = std::min(least, quant::stored_bits(c, n_out, n_in));
        bits += least;
    }
    return total > 0 ? bits / total : 0.0;
}

void check_reachable(const AutoQuantTarget& target, double narrowest) {
    if (target.bits_per_weight > 0 && narrowest > target.bits_per_weight)
        fail("--quant auto:bpw={}: the narrowest widths take {:.3f} bits per weight",
             target.bits_per_weight, narrowest);
}

double predicted_kl(const std::vector<BudgetItem>& items, const std::vector<int>& pick) {
    double total = 0;
    for (size_t i = 0; i < items.size(); ++i) total += items[i].kl[static_cast<size_t>(pick[i])];
    return total;
}

}  // namespace

std::optional<AutoQuantTarget> parse_auto_target(std::string_view text) {
    if (!text.starts_with("auto")) return std::nullopt;
    AutoQuantTarget target;
    if (text.starts_with("auto:bpw=")) {
        target.bits_per_weight = parse_positive(text.substr(9), "bpw=");
    } else if (text.starts_with("auto:kl=")) {
        target.kl = parse_positive(text.substr(8), "kl=");
    } else {
        fail("--quant {}: expected auto:bpw=BITS (bits per weight) or auto:kl=KL", text);
    }
    return target;
}

std::vector<quant::QuantChoice> auto_candidates() {
    std::vector<quant::QuantChoice> c;
    for (int bits : {2, 3, 4, 6, 8})
        for (int64_t group : {int64_t{8}, int64_t{32}})
            c.push_back({quant::QuantMethod::lut, bits, group});
    c.push_back({});
    return c;
}

namespace {

// The dynamic programme over `capacity` units: costs[i][k] units per choice.
std::vector<int> least_kl_within(const std::vector<BudgetItem>& items,
                                 const std::vector<std::vector<int64_t>>& costs, int64_t capacity) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    const auto steps = static_cast<size_t>(capacity);
    // best[s]: the least KL of the items so far within s units.
    std::vector<double> best(steps + 1, 0.0), next(steps + 1);
    std::vector<std::vector<uint8_t>> pick(items.size(), std::vector<uint8_t>(steps + 1, 0));
    for (size_t i = 0; i < items.size(); ++i) {
        for (size_t s = 0; s <= steps; ++s) {
            double v = inf;
            for (size_t k = 0; k < costs[i].size(); ++k) {
                if (costs[i][k] > static_cast<int64_t>(s)) continue;
                const double c = best[s - static_cast<size_t>(costs[i][k])] + items[i].kl[k];
                if (c < v) {
                    v = c;
                    pick[i][s] = static_cast<uint8_t>(k);
                }
            }
            next[s] = v;
        }
        std::swap(best, next);
    }
    if (best[steps] == inf) return {};
    std::vector<int> choice(items.size());
    size_t s = steps;
    for (size_t i = items.size(); i-- > 0;) {
        choice[i] = pick[i][s];
        s -= static_cast<size_t>(costs[i][static_cast<size_t>(choice[i])]);
    }
    return choice;
}

}  // namespace

std::vector<int> solve_budget(const std::vector<BudgetItem>& items, double budget) {
    if (!(budget >= 0)) return {};
    // Costs in 1/65536 of the budget, rounded to the nearest unit; where the
    // rounding lets a choice past the real budget, the capacity shrinks by
    // the excess and the programme runs again.
    const double unit = budget > 0 ? budget / budget_steps : 1.0;
    std::vector<std::vector<int64_t>> costs;
    for (const BudgetItem& item : items) {
        auto& c = costs.emplace_back();
        for (double b : item.bits) c.push_back(std::llround(b / unit));
    }
    for (int64_t capacity = budget_steps; capacity >= 0;) {
        std::vector<int> choice = least_kl_within(items, costs, capacity);
        if (choice.empty()) return {};
        double bits = 0;
        for (size_t i = 0; i < items.size(); ++i)
            bits += items[i].bits[static_cast<size_t>(choice[i])];
        if (bits <= budget) return choice;
        capacity -= std::max<int64_t>(1, static_cast<int64_t>(std::ceil((bits - budget) / unit)));
    }
    return {};
}

void check_auto_target(const ModelSpec& spec, const WeightStore& weights,
                       const quant::QuantSpec& base, const AutoQuantTarget& target) {
    ProgramOptions po;
    po.n_ctx = 1;
    po.functions = {{"prefill", 1, true}};
    ir::Program program = runtime_program(spec, weights, po);
    const std::vector<quant::WeightJob> jobs =
        quant::quantization_jobs(program, every_matrix(base));
    check_reachable(target, narrowest_bits(program, jobs, base));
}

AutoQuantResult choose_quantization(const ModelSpec& spec, const WeightStore& weights,
                                    const quant::QuantSpec& base,
                                    const quant::ModelCalibration& calibration,
                                    const std::vector<std::vector<int32_t>>& windows,
                                    const AutoQuantTarget& target, int threads,
                                    const ProgressFn& progress) {
    const auto start = std::chrono::steady_clock::now();
    if (windows.empty() || windows.front().empty()) fail("--quant auto: no calibration tokens");
    const std::span<const int32_t> window =
        std::span<const int32_t>(windows.front())
            .first(std::min(windows.front().size(), static_cast<size_t>(kl_window_tokens)));
    ThreadPool pool(threads > 0 ? threads : ThreadPool::physical_cores());
    ProgramOptions po;
    po.n_ctx = static_cast<int64_t>(window.size());
    po.functions = {{"prefill", po.n_ctx, true}};
    ir::Program program = runtime_program(spec, weights, po);
    const std::vector<quant::WeightJob> jobs =
        quant::quantization_jobs(program, every_matrix(base));
    check_reachable(target, narrowest_bits(program, jobs, base));
    WindowRun run(program, pool, window, spec.n_vocab);

    const std::vector<quant::QuantChoice> candidates = auto_candidates();
    AutoQuantResult result;
    result.tokens = static_cast<int64_t>(window.size());
    std::vector<BudgetItem> items;
    std::vector<size_t> item_matrix;  // the matrix of each item
    double fixed_bits = 0, total_weights = 0;
    const auto n_searched = std::count_if(
        jobs.begin(), jobs.end(), [&](const auto& job) { return is_searched(program, job, base); });
    int64_t done = 0;
    quant::GramFactorCache factors;
    // In program order, so each KL run starts from the checkpoint the last left.
    const std::vector<size_t> first_reader = ir::first_readers(program, program.functions.front());
    std::vector<size_t> order(jobs.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return first_reader[jobs[a].weight] < first_reader[jobs[b].weight];
    });
    result.matrices.resize(jobs.size());
    for (const size_t j : order) {
        const quant::WeightJob& job = jobs[j];
        ir::Weight& w = program.weights[job.weight];
        MatrixChoice m;
        m.name = w.name;
        m.n_out = w.view.shape[0];
        m.n_in = w.view.numel() / m.n_out;
        total_weights += static_cast<double>(w.view.numel());
        if (!is_searched(program, job, base)) {
            m.choice = fixed_choice(program, job, base);
            m.bits = quant::stored_bits(m.choice, m.n_out, m.n_in);
            fixed_bits += m.bits;
            result.matrices[j] = m;
            continue;
        }
        m.searched = true;
        const quant::InputStats* stats = calibration.find(w.name);
        const RowSample rows = candidate_rows(w.view);
        const auto error_of = [&](const quant::QuantizedMatrix& q) {
            return stats
                       ? quant::output_error(rows.view, q, *stats, pool, quant::GramTerms::diagonal)
                       : quant::quant_error(rows.view, q, pool).sum_dd;
        };
        const quant::QuantChoice reference{quant::QuantMethod::lut,
                                           m.n_in * reference_bits % 8 == 0 ? reference_bits : 8,
                                           quant::default_group_size};
        // Every candidate's output error with the weighted tables' nearest
        // codes (the widths of a group size made together, on the sampled
        // rows); the matrix's KL measured at the reference width with the
        // calibration's own codes (GPTQ's column pass, the costly part, runs
        // there alone); the other widths' KL in proportion to their errors.
        BudgetItem item;
        std::vector<double> error(candidates.size(), 0.0);
        std::map<int64_t, std::vector<size_t>> by_group;  // the LUT candidates of each group size
        for (size_t k = 0; k < candidates.size(); ++k) {
            const quant::QuantChoice& c = candidates[k];
            item.bits.push_back(quant::stored_bits(c, m.n_out, m.n_in));
            if (!packable(c, m.n_in))
                error[k] = std::numeric_limits<double>::infinity();
            else if (c.method != quant::QuantMethod::none)
                by_group[c.group_size].push_back(k);
        }
        for (const auto& [group, ks] : by_group) {
            std::vector<int> widths;
            for (const size_t k : ks) widths.push_back(candidates[k].nbits);
            const std::vector<quant::QuantizedMatrix> made = quant::palettize_widths(
                rows.view, group, widths, pool, 0, {stats, quant::CalibMethod::weighted});
            for (size_t i = 0; i < ks.size(); ++i) error[ks[i]] = error_of(made[i]);
        }
        double reference_error = 0;
        for (size_t k = 0; k < candidates.size(); ++k)
            if (candidates[k] == reference) reference_error = error[k];
        w.quantized = std::make_shared<const quant::QuantizedMatrix>(quant::quantize_matrix(
            w.view, reference, pool, 0, {}, {stats, calibration.method, &factors}));
        const double reference_kl = run.kl_from(first_reader[job.weight]);
        w.quantized = nullptr;
        for (const double e : error)
            item.kl.push_back(std::isinf(e)         ? e
                              : reference_error > 0 ? reference_kl * e / reference_error
                                                    : 0.0);
        items.push_back(std::move(item));
        item_matrix.push_back(j);
        result.matrices[j] = m;
        if (progress) progress(++done, n_searched);
    }

    std::vector<int> pick;
    if (target.bits_per_weight > 0) {
        pick = solve_budget(items, target.bits_per_weight * total_weights - fixed_bits);
        // Reachable (checked above) but for the budget's rounding to its units.
        if (pick.empty()) fail("--quant auto:bpw={}: no choice fits", target.bits_per_weight);
    } else {
        // The fewest bits per weight whose choice is predicted within the KL.
        double lo = 0, hi = 16;
        pick = solve_budget(items, hi * total_weights - fixed_bits);
        for (int step = 0; step < 40; ++step) {
            const double mid = (lo + hi) / 2;
            const std::vector<int> p = solve_budget(items, mid * total_weights - fixed_bits);
            if (!p.empty() && predicted_kl(items, p) <= target.kl) {
                hi = mid;
                pick = p;
            } else {
                lo = mid;
            }
        }
    }

    result.spec = base;
    double bits = fixed_bits;
    for (size_t i = 0; i < items.size(); ++i) {
        MatrixChoice& m = result.matrices[item_matrix[i]];
        const auto k = static_cast<size_t>(pick[i]);
        m.choice = candidates[k];
        m.bits = items[i].bits[k];
        m.predicted_kl = items[i].kl[k];
        bits += m.bits;
        result.predicted_kl += m.predicted_kl;
    }
    for (const MatrixChoice& m : result.matrices) result.spec.per_weight[m.name] = m.choice;
    result.bits_per_weight = bits / total_weights;

    // Every choice at once, measured.
    for (size_t j = 0; j < jobs.size(); ++j) {
        const MatrixChoice& m = result.matrices[j];
        if (m.choice.method == quant::QuantMethod::none) continue;
        quant::WeightJob job = jobs[j];
        job.choice = m.choice;
        quant::quantize_job(program, job, pool, 0, &calibration, &factors);
        const ir::Weight& w = program.weights[job.weight];
        result.made[w.name] = {w.view, w.storage, job.choice, 0, false, w.quantized};
    }
    result.measured_kl = run.kl();
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
}

}  // namespace anelm

#include "quant/kmeans_1d.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "quant/sort_floats.h"

namespace anelm::quant {

namespace {

// Scratch arrays kept per thread: groups are quantized one after another, and
// allocating their arrays afresh each time costs more than the k-means (page
// faults as the allocator hands memory back and forth).
std::vector<double>& scratch(int slot, size_t n) {
    thread_local std::vector<double> buffers[4];
    std::vector<double>& b = buffers[slot];
    b.resize(n);
    return b;
}

// Prefix sums of counts, values and squares (values taken relative to their
// weighted mean, which keeps the cost differences well conditioned).
class Prefix {
public:
    explicit Prefix(const WeightedValues& p)
        : w_(scratch(0, p.value.size() + 1)),
          s1_(scratch(1, p.value.size() + 1)),
          s2_(scratch(2, p.value.size() + 1)) {
        const size_t m = p.value.size();
        double total = 0, sum = 0;
        for (size_t i = 0; i < m; ++i) {
            total += p.count[i];
            sum += p.count[i] * p.value[i];
        }
        ref_ = total > 0 ? sum / total : 0.0;
        w_[0] = s1_[0] = s2_[0] = 0.0;
        for (size_t i = 0; i < m; ++i) {
            const double v = p.value[i] - ref_;
            w_[i + 1] = w_[i] + p.count[i];
            s1_[i + 1] = s1_[i] + p.count[i] * v;
            s2_[i + 1] = s2_[i] + p.count[i] * v * v;
        }
    }

    // Squared error of points [a, b) around their mean (a < b).
    double cost(size_t a, size_t b) const {
        const double w = w_[b] - w_[a], s1 = s1_[b] - s1_[a];
        return std::max(0.0, s2_[b] - s2_[a] - s1 * s1 / w);
    }
    double mean(size_t a, size_t b) const { return ref_ + (s1_[b] - s1_[a]) / (w_[b] - w_[a]); }

private:
    double ref_ = 0;
    std::vector<double>& w_;
    std::vector<double>& s1_;
    std::vector<double>& s2_;
};

// A uniform double in [0, 1) from a splitmix64 stream: the same draws on every
// platform and standard library.
class Random {
public:
    explicit Random(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    uint64_t state_;
};

KMeansResult every_value(const WeightedValues& points) {
    KMeansResult r;
    r.centers = points.value;
    r.exact = true;
    return r;
}

// Layer j of the programme: cur[i] = min over s in [opt_lo, opt_hi] (s < i) of
// prev[s] + cost(s, i), for i in [lo, hi], by divide and conquer on the
// non-decreasing optimal split.
void solve_layer(const Prefix& prefix, const std::vector<double>& prev, std::vector<double>& cur,
                 std::vector<int32_t>& arg, int64_t lo, int64_t hi, int64_t opt_lo,
                 int64_t opt_hi) {
    while (lo <= hi) {
        const int64_t mid = (lo + hi) / 2;
        double best = std::numeric_limits<double>::infinity();
        int64_t best_s = opt_lo;
        for (int64_t s = opt_lo; s <= std::min(opt_hi, mid - 1); ++s) {
            const double c =
                prev[s] + prefix.cost(static_cast<size_t>(s), static_cast<size_t>(mid));
            if (c < best) {
                best = c;
                best_s = s;
            }
        }
        cur[mid] = best;
        arg[mid] = static_cast<int32_t>(best_s);
        // The left half recursively, the right half by the loop.
        solve_layer(prefix, prev, cur, arg, lo, mid - 1, opt_lo, best_s);
        lo = mid + 1;
        opt_lo = best_s;
    }
}

// Squared weights of the points closer to their nearest chosen centre than to
// nothing, kept with sums per block of 64 so that a draw costs O(m / 64 + 64).
class SeedWeights {
public:
    SeedWeights(const WeightedValues& p, double first)
        : p_(p), weight_(scratch(3, p.value.size())) {
        const size_t m = p.value.size();
        for (size_t i = 0; i < m; ++i) weight_[i] = p.count[i] * square(p.value[i] - first);
        block_.assign((m + block - 1) / block, 0.0);
        for (size_t b = 0; b < block_.size(); ++b) sum_block(b);
    }

    // Points [lo, hi) are now nearest to centre c.
    void update(size_t lo, size_t hi, double c) {
        for (size_t i = lo; i < hi; ++i)
            weight_[i] = std::min(weight_[i], p_.count[i] * square(p_.value[i] - c));
        for (size_t b = lo / block; b * block < hi; ++b) sum_block(b);
    }

    // A point index drawn with probability proportional to its weight.
    size_t draw(Random& rng) const {
        double total = 0;
        for (double s : block_) total += s;
        double r = rng.uniform() * total;
        size_t b = 0;
        while (b + 1 < block_.size() && r >= block_[b]) r -= block_[b++];
        const size_t end = std::min(weight_.size(), (b + 1) * block);
        size_t last_positive = b * block;
        for (size_t i = b * block; i < end; ++i) {
            if (weight_[i] <= 0) continue;
            last_positive = i;
            if (r < weight_[i]) return i;
            r -= weight_[i];
        }
        return last_positive;  // rounding ran past the end
    }

private:
    static constexpr size_t block = 64;
    static double square(double v) { return v * v; }
    void sum_block(size_t b) {
        double s = 0;
        const size_t end = std::min(weight_.size(), (b + 1) * block);
        for (size_t i = b * block; i < end; ++i) s += weight_[i];
        block_[b] = s;
    }

    const WeightedValues& p_;
    std::vector<double>& weight_;
    std::vector<double> block_;
};

// k-means++: the first centre drawn by count, each next one by count times the
// squared distance to the nearest centre so far. Needs m > k.
std::vector<double> seed_centers(const WeightedValues& p, int k, Random& rng) {
    const std::vector<double>& v = p.value;
    // First draw: proportional to count alone.
    double total = 0;
    for (double c : p.count) total += c;
    double r = rng.uniform() * total;
    size_t first = 0;
    while (first + 1 < v.size() && r >= p.count[first]) r -= p.count[first++];

    std::vector<double> chosen = {v[first]};  // ascending
    SeedWeights weights(p, v[first]);
    while (static_cast<int>(chosen.size()) < k) {
        const double c = v[weights.draw(rng)];
        const auto pos = std::lower_bound(chosen.begin(), chosen.end(), c);
        // The points now nearest to c lie between the midpoints to its neighbours.
        const size_t lo =
            pos == chosen.begin()
                ? 0
                : static_cast<size_t>(std::upper_bound(v.begin(), v.end(), (*(pos - 1) + c) / 2) -
                                      v.begin());
        const size_t hi =
            pos == chosen.end()
                ? v.size()
                : static_cast<size_t>(std::lower_bound(v.begin(), v.end(), (*pos + c) / 2) -
                                      v.begin());
        chosen.insert(pos, c);
        weights.update(lo, hi, c);
    }
    return chosen;
}

// The first index in sorted v whose value exceeds x, searched outward from a
// guess: Lloyd's boundaries move little between iterations, so this costs
// O(log distance) instead of O(log m).
size_t upper_bound_near(const std::vector<double>& v, double x, size_t guess) {
    const auto n = static_cast<int64_t>(v.size());
    int64_t lo = 0, hi = n;  // the answer lies in [lo, hi]
    int64_t probe = std::min<int64_t>(static_cast<int64_t>(guess), n);
    if (probe < n && v[static_cast<size_t>(probe)] <= x) {
        for (int64_t step = 1; probe < n && v[static_cast<size_t>(probe)] <= x; step *= 2) {
            lo = probe + 1;
            probe += step;
        }
        hi = std::min(probe, n);
    } else {
        hi = probe;
        for (int64_t step = 1; --probe >= 0 && v[static_cast<size_t>(probe)] > x; step *= 2) {
            hi = probe;
            probe -= step - 1;
        }
        lo = std::max<int64_t>(probe + 1, 0);
    }
    return static_cast<size_t>(std::upper_bound(v.begin() + lo, v.begin() + hi, x) - v.begin());
}

// Lloyd iterations from sorted centres until the assignment stops changing.
KMeansResult lloyd(const WeightedValues& p, const Prefix& prefix, std::vector<double> centers,
                   int max_iterations) {
    const std::vector<double>& v = p.value;
    const size_t k = centers.size();
    // Cluster j holds points [bound[j], bound[j + 1]).
    std::vector<size_t> bound(k + 1, 0), previous;
    bound[k] = v.size();
    for (int iteration = 0; iteration < max_iterations; ++iteration) {
        for (size_t j = 1; j < k; ++j) {
            const double mid = (centers[j - 1] + centers[j]) / 2;
            bound[j] = upper_bound_near(v, mid, iteration == 0 ? v.size() / 2 : bound[j]);
        }
        if (bound == previous) break;
        previous = bound;
        bool reseeded = false;
        for (size_t j = 0; j < k; ++j) {
            if (bound[j] < bound[j + 1]) {
                centers[j] = prefix.mean(bound[j], bound[j + 1]);
                continue;
            }
            // An empty cluster moves to the point that costs the most where it is.
            double worst = -1;
            size_t worst_i = 0;
            for (size_t c = 0; c < k; ++c) {
                for (size_t i = bound[c]; i < bound[c + 1]; ++i) {
                    const double e = p.count[i] * (v[i] - centers[c]) * (v[i] - centers[c]);
                    if (e > worst) {
                        worst = e;
                        worst_i = i;
                    }
                }
            }
            centers[j] = v[worst_i];
            reseeded = true;
        }
        if (reseeded) {
            std::sort(centers.begin(), centers.end());
            previous.clear();
        }
    }
    KMeansResult r;
    r.centers = std::move(centers);
    for (size_t j = 0; j < k; ++j) {
        if (bound[j] < bound[j + 1]) r.sse += prefix.cost(bound[j], bound[j + 1]);
    }
    return r;
}

}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t stream) {
    Random rng(seed ^ (stream * 0xd1b54a32d192ed03ull));
    return rng.next();
}

void distinct_values(std::span<float> values, WeightedValues& out) {
    sort_floats(values);
    out.value.clear();
    out.count.clear();
    for (size_t i = 0; i < values.size();) {
        size_t j = i + 1;
        while (j < values.size() && values[j] == values[i]) ++j;
        out.value.push_back(values[i]);
        out.count.push_back(static_cast<double>(j - i));
        i = j;
    }
}

KMeansResult kmeans_1d_exact(const WeightedValues& points, int k) {
    const auto m = static_cast<int64_t>(points.value.size());
    if (m <= k) return every_value(points);
    const Prefix prefix(points);
    // d[i]: least cost of the first i points in j clusters; arg[j][i]: where the last one starts.
    std::vector<double> prev(static_cast<size_t>(m + 1)), cur(prev.size());
    std::vector<std::vector<int32_t>> arg(static_cast<size_t>(k),
                                          std::vector<int32_t>(prev.size()));
    for (int64_t i = 1; i <= m; ++i) prev[i] = prefix.cost(0, static_cast<size_t>(i));
    for (int j = 1; j < k; ++j) {
        // j + 1 clusters need at least j + 1 points; the last k - j - 1 clusters need theirs.
        solve_layer(prefix, prev, cur, arg[static_cast<size_t>(j)], j + 1, m - (k - j - 1), j,
                    m - 1);
        std::swap(prev, cur);
    }
    KMeansResult r;
    r.exact = true;
    r.sse = prev[m];
    r.centers.resize(static_cast<size_t>(k));
    int64_t end = m;
    for (int j = k - 1; j >= 0; --j) {
        const int64_t begin = j == 0 ? 0 : arg[static_cast<size_t>(j)][end];
        r.centers[static_cast<size_t>(j)] =
            prefix.mean(static_cast<size_t>(begin), static_cast<size_t>(end));
        end = begin;
    }
    return r;
}

KMeansResult kmeans_1d_lloyd(const WeightedValues& points, int k, uint64_t seed,
                             const KMeansOptions& options) {
    if (static_cast<int64_t>(points.value.size()) <= k) return every_value(points);
    const Prefix prefix(points);
    Random rng(seed);
    KMeansResult best;
    for (int run = 0; run < std::max(1, options.n_init); ++run) {
        KMeansResult r =
            lloyd(points, prefix, seed_centers(points, k, rng), options.max_iterations);
        if (run == 0 || r.sse < best.sse) best = std::move(r);
    }
    return best;
}

KMeansResult kmeans_1d(const WeightedValues& points, int k, uint64_t seed,
                       const KMeansOptions& options) {
    const auto m = static_cast<int64_t>(points.value.size());
    if (m <= k) return every_value(points);
    const auto log2m = static_cast<int64_t>(std::ceil(std::log2(static_cast<double>(m))));
    if (k * m * log2m <= options.exact_budget) return kmeans_1d_exact(points, k);
    return kmeans_1d_lloyd(points, k, seed, options);
}

}  // namespace anelm::quant

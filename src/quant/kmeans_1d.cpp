#include "quant/kmeans_1d.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>

#include "quant/sort_floats.h"

namespace anelm::quant {

namespace {

// Scratch arrays kept per thread: groups are quantized one after another, and
// allocating their arrays afresh each time costs more than the k-means (page
// faults as the allocator hands memory back and forth).
template <class T = double>
std::vector<T>& scratch(int slot, size_t n) {
    thread_local std::vector<T> buffers[6];
    std::vector<T>& b = buffers[slot];
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
    // The sums over the first i points: counts, values, squares.
    double w(size_t i) const { return w_[i]; }
    double s1(size_t i) const { return s1_[i]; }
    double s2(size_t i) const { return s2_[i]; }

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

// A layer of the exact programme as a matrix: row i, column s < i holds
// prev[s] + cost(s, i) - s2(i) = q[s] - (s1(i) - s1(s))^2 / (w(i) - w(s)) with
// q[s] = prev[s] - s2(s), and s >= i holds +infinity. (The row's own term s2(i)
// changes no minimum; it is added back after.) Cluster costs satisfy the
// quadrangle inequality cost(a, c) + cost(b, d) <= cost(a, d) + cost(b, c) for
// a <= b <= c <= d, so the matrix is totally monotone: a row's leftmost minimum
// lies at or right of the row above's.
class Layer {
public:
    Layer(const Prefix& prefix, const std::vector<double>& prev, int32_t first_col,
          int32_t last_col)
        : prefix_(prefix), col_(scratch<Column>(0, static_cast<size_t>(last_col) + 1)) {
        for (int32_t s = first_col; s <= last_col; ++s) {
            const auto u = static_cast<size_t>(s);
            col_[u] = {prefix.w(u), prefix.s1(u), prev[u] - prefix.s2(u)};
        }
    }
    double value(int64_t i, int32_t s) const {
        if (s >= i) return std::numeric_limits<double>::infinity();
        const Column& c = col_[static_cast<size_t>(s)];
        const double d = prefix_.s1(static_cast<size_t>(i)) - c.s1;
        return c.q - d * d / (prefix_.w(static_cast<size_t>(i)) - c.w);
    }
    // value(i, s) < x, without a division.
    bool below(int64_t i, int32_t s, double x) const {
        if (s >= i) return false;
        const Column& c = col_[static_cast<size_t>(s)];
        const double d = prefix_.s1(static_cast<size_t>(i)) - c.s1;
        return (c.q - x) * (prefix_.w(static_cast<size_t>(i)) - c.w) < d * d;
    }

private:
    struct Column {
        double w, s1, q;
    };
    const Prefix& prefix_;
    std::vector<Column>& col_;
};

// Row minima of a totally monotone matrix by SMAWK (Aggarwal, Klawe, Moran, Shor
// and Wilber): rows first_row + t for t < n_rows, columns [first_col, last_col].
// Each row's leftmost minimum lies at or right of the previous row's, so the odd
// rows are solved first, recursively, over only the columns that can still hold
// one of their minima (REDUCE), and then each even row scans just the columns
// between its neighbours' minima. O(rows + columns) evaluations. Writes min[r]
// and arg[r] (the leftmost minimum's column).
template <class Matrix>
void row_minima(const Matrix& a, int64_t first_row, int64_t n_rows, int32_t first_col,
                int32_t last_col, double* min, int32_t* arg) {
    // Level l: rows first + t * step for t < n, candidate columns cols[begin, end).
    struct Level {
        int64_t first, step, n;
        size_t begin, end;
    };
    thread_local std::vector<int32_t> cols;
    thread_local std::vector<double> top;
    thread_local std::vector<Level> levels;
    cols.resize(static_cast<size_t>(last_col - first_col + 1));
    for (size_t c = 0; c < cols.size(); ++c) cols[c] = first_col + static_cast<int32_t>(c);
    levels.clear();
    Level level{first_row, 1, n_rows, 0, cols.size()};
    while (level.n > 0) {
        // REDUCE once the columns outnumber the rows twice (it costs two or three
        // evaluations a column; below that ratio the scans are cheaper).
        const auto n = static_cast<size_t>(level.n);
        if (level.end - level.begin > 2 * n) {
            // The stack keeps at most n columns: stack[t] is not beaten on rows up
            // to row t by any column after it, and top[t] is its value on row t.
            const size_t out = level.end;
            const auto row = [&](size_t t) {
                return level.first + static_cast<int64_t>(t) * level.step;
            };
            cols.resize(out + n);
            top.resize(n);
            size_t len = 0;
            for (size_t p = level.begin; p < level.end; ++p) {
                const int32_t c = cols[p];
                while (len > 0 && a.below(row(len - 1), c, top[len - 1])) --len;
                if (len < n) {
                    cols[out + len] = c;
                    top[len] = a.value(row(len), c);
                    ++len;
                }
            }
            level.begin = out;
            level.end = out + len;
            cols.resize(level.end);
        }
        levels.push_back(level);
        level = {level.first + level.step, 2 * level.step, level.n / 2, level.begin, level.end};
    }
    // Deepest level first: each even row between the minima of the odd rows around it.
    for (auto l = levels.rbegin(); l != levels.rend(); ++l) {
        size_t p = l->begin;
        for (int64_t t = 0; t < l->n; t += 2) {
            const int64_t r = l->first + t * l->step;
            const int32_t bound =
                t + 1 < l->n ? arg[r + l->step] : std::numeric_limits<int32_t>::max();
            double best = std::numeric_limits<double>::infinity();
            int32_t best_c = cols[p];
            for (; p < l->end && cols[p] <= bound; ++p) {
                const double v = a.value(r, cols[p]);
                if (v < best) {
                    best = v;
                    best_c = cols[p];
                }
            }
            min[r] = best;
            arg[r] = best_c;
            --p;  // the bound column starts the next even row's range
        }
    }
}

// Optimal partitions at a price per cluster (the Lagrangian relaxation of the
// cluster count): f[i] = min over s < i of f[s] + cost(s, i) + price, the least
// cost of the first i points when each cluster also costs `price`, over any
// number of clusters. Whatever count c the best partition has, it is an optimal
// c-clustering (any other c-clustering costs more, plus the same c * price).
//
// One pass is O(m log m): by the quadrangle inequality, once a later split is at
// least as good as an earlier one for some end i, it stays so for every larger
// i. So the splits that can still win form a queue, ordered by split and by the
// end from which each wins; a new split drops the ones it beats from their start
// on, and a galloping search finds where it overtakes the last one left.
class PricedPartition {
public:
    PricedPartition(const Prefix& prefix, int64_t m)
        : prefix_(prefix),
          m_(m),
          f_(scratch(4, static_cast<size_t>(m + 1))),
          from_(scratch<int32_t>(0, static_cast<size_t>(m + 1))),
          count_(scratch<int32_t>(1, static_cast<size_t>(m + 1))) {}

    // Runs a pass; the number of clusters of the best partition.
    int clusters(double price) {
        const auto value = [&](int64_t s, int64_t i) {
            return f_[s] + prefix_.cost(static_cast<size_t>(s), static_cast<size_t>(i));
        };
        // Split a, later than b, is at least as good for the points up to i:
        // f[a] - s2(a) - d_a^2 / w_a <= f[b] - s2(b) - d_b^2 / w_b (the cost's
        // s2(i) cancels) with d_s, w_s the sums of values and counts over
        // [s, i), multiplied out so that no division is needed.
        const auto wins = [&](int64_t a, int64_t b, int64_t i) {
            const auto u = static_cast<size_t>(a), v = static_cast<size_t>(b),
                       e = static_cast<size_t>(i);
            const double wa = prefix_.w(e) - prefix_.w(u), wb = prefix_.w(e) - prefix_.w(v);
            const double da = prefix_.s1(e) - prefix_.s1(u), db = prefix_.s1(e) - prefix_.s1(v);
            const double ga = f_[u] - prefix_.s2(u), gb = f_[v] - prefix_.s2(v);
            return (ga - gb) * wa * wb <= da * da * wb - db * db * wa;
        };
        queue_.assign(1, {0, 1});
        size_t head = 0;
        f_[0] = 0;
        count_[0] = 0;
        for (int64_t i = 1;; ++i) {
            while (head + 1 < queue_.size() && queue_[head + 1].start <= i) ++head;
            const int64_t s = queue_[head].split;
            f_[i] = value(s, i) + price;
            from_[i] = static_cast<int32_t>(s);
            count_[i] = count_[s] + 1;
            if (i == m_) return count_[i];
            while (queue_.size() > head + 1 && wins(i, queue_.back().split, queue_.back().start))
                queue_.pop_back();
            const Candidate last = queue_.back();
            // The first end in [lo, m] where i wins over the last split; m + 1 if none.
            const int64_t lo = std::max(last.start, i + 1);
            int64_t lose = lo - 1, win = m_ + 1;
            for (int64_t step = 1; lo + step - 1 <= m_; step *= 2) {
                if (wins(i, last.split, lo + step - 1)) {
                    win = lo + step - 1;
                    break;
                }
                lose = lo + step - 1;
            }
            while (win - lose > 1) {
                const int64_t mid = lose + (win - lose) / 2;
                (wins(i, last.split, mid) ? win : lose) = mid;
            }
            if (win <= m_) queue_.push_back({i, win});
        }
    }

    // The last pass's best partition: its clusters' first points, ascending, and m.
    std::vector<int64_t> bounds() const {
        std::vector<int64_t> b(static_cast<size_t>(count_[m_]) + 1);
        int64_t end = m_;
        for (size_t j = b.size(); j-- > 0;) {
            b[j] = end;
            if (end > 0) end = from_[end];
        }
        return b;
    }

private:
    struct Candidate {
        int64_t split, start;
    };
    const Prefix& prefix_;
    int64_t m_;
    std::vector<double>& f_;
    std::vector<int32_t>& from_;
    std::vector<int32_t>& count_;
    std::vector<Candidate> queue_;
};

// The centres and error of the clusters [bounds[j], bounds[j + 1]).
KMeansResult clusters_of(const Prefix& prefix, const std::vector<int64_t>& bounds) {
    KMeansResult r;
    r.exact = true;
    for (size_t j = 0; j + 1 < bounds.size(); ++j) {
        const auto a = static_cast<size_t>(bounds[j]), b = static_cast<size_t>(bounds[j + 1]);
        r.centers.push_back(prefix.mean(a, b));
        r.sse += prefix.cost(a, b);
    }
    return r;
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

void weighted_distinct_values(std::span<const float> values, std::span<const double> weights,
                              WeightedValues& out) {
    // The distinct values by the radix sort, then each weight added to its
    // value's count through a hash table of the values' bits (the zeros as
    // one): a probe or two per value, where a binary search took a dozen
    // unpredictable steps, and faster than sorting pairs.
    std::vector<float>& sorted = scratch<float>(0, values.size());
    std::copy(values.begin(), values.end(), sorted.begin());
    sort_floats(sorted);
    out.value.clear();
    for (size_t i = 0; i < sorted.size(); ++i)
        if (i == 0 || sorted[i] != sorted[i - 1]) out.value.push_back(sorted[i]);
    out.count.assign(out.value.size(), 0.0);
    if (out.value.empty()) return;
    const size_t size = std::bit_ceil(2 * out.value.size());
    const size_t mask = size - 1;
    const int shift = 32 - std::countr_zero(size);
    std::vector<uint32_t>& keys = scratch<uint32_t>(0, size);
    std::vector<int32_t>& place = scratch<int32_t>(1, size);
    std::fill(place.begin(), place.end(), -1);
    const auto key_of = [](float v) { return v == 0.0f ? 0u : std::bit_cast<uint32_t>(v); };
    const auto home = [&](uint32_t key) { return size_t{(key * 0x9E3779B1u) >> shift}; };
    for (size_t j = 0; j < out.value.size(); ++j) {
        const uint32_t key = key_of(static_cast<float>(out.value[j]));
        size_t h = home(key);
        while (place[h] >= 0) h = (h + 1) & mask;
        keys[h] = key;
        place[h] = static_cast<int32_t>(j);
    }
    for (size_t i = 0; i < values.size(); ++i) {
        const uint32_t key = key_of(values[i]);
        size_t h = home(key);
        while (place[h] < 0 || keys[h] != key) h = (h + 1) & mask;
        out.count[static_cast<size_t>(place[h])] += weights[i];
    }
}

KMeansResult kmeans_1d_layered(const WeightedValues& points, int k) {
    const auto m = static_cast<int64_t>(points.value.size());
    if (m <= k) return every_value(points);
    const Prefix prefix(points);
    // prev[i], cur[i]: the least cost of the first i points in j and j + 1 clusters;
    // arg[j * (m + 1) + i]: where the last of j + 1 clusters starts.
    std::vector<double>& prev = scratch(4, static_cast<size_t>(m + 1));
    std::vector<double>& cur = scratch(5, prev.size());
    std::vector<int32_t> arg(static_cast<size_t>(k) * prev.size());
    for (int64_t i = 1; i <= m; ++i) prev[i] = prefix.cost(0, static_cast<size_t>(i));
    for (int j = 1; j < k; ++j) {
        // j + 1 clusters need j + 1 points, and the last k - j - 1 clusters need theirs.
        const int64_t first_row = j + 1, last_row = m - (k - j - 1);
        const Layer layer(prefix, prev, j, static_cast<int32_t>(last_row - 1));
        row_minima(layer, first_row, last_row - first_row + 1, j,
                   static_cast<int32_t>(last_row - 1), cur.data(), arg.data() + j * (m + 1));
        for (int64_t i = first_row; i <= last_row; ++i) cur[i] += prefix.s2(static_cast<size_t>(i));
        std::swap(prev, cur);
    }
    std::vector<int64_t> bounds(static_cast<size_t>(k) + 1);
    bounds[static_cast<size_t>(k)] = m;
    for (int j = k - 1; j > 0; --j)
        bounds[static_cast<size_t>(j)] = arg[static_cast<size_t>(j * (m + 1) + bounds[j + 1])];
    return clusters_of(prefix, bounds);
}

std::optional<KMeansResult> kmeans_1d_lagrangian(const WeightedValues& points, int k) {
    const auto m = static_cast<int64_t>(points.value.size());
    if (m <= k) return every_value(points);
    const Prefix prefix(points);
    PricedPartition partition(prefix, m);
    const auto best_at = [&](double price) {
        partition.clusters(price);
        return clusters_of(prefix, partition.bounds());
    };
    const auto count = [](const KMeansResult& r) { return static_cast<int>(r.centers.size()); };
    // First guess: k-means error goes as 1 / k^2 (for a Gaussian, 2.72 V / k^2
    // with V the total squared deviation, Panter and Dite), so the k-th cluster
    // saves about 5.44 V / k^3, and the count goes as price^(-1/3).
    double price = 5.44 * prefix.s2(static_cast<size_t>(m)) / std::pow(k, 3.0);
    std::optional<KMeansResult> above, below;  // best partitions of more, of fewer than k clusters
    for (int pass = 0; pass < 40; ++pass) {
        KMeansResult r = best_at(price);
        const int c = count(r);
        if (c == k) return r;
        if (above && below && (c >= count(*above) || c <= count(*below))) {
            // At the chord's price nothing beat the two ends: the optimal costs of
            // their counts and of every count between lie on a line.
            return std::nullopt;
        }
        (c > k ? above : below) = std::move(r);
        if (above && below) {
            // The price at which both ends cost the same; whatever lies below
            // their chord (a count between) wins there.
            price = (below->sse - above->sse) / (count(*above) - count(*below));
        } else {
            price *= std::pow(static_cast<double>(c) / k, 3.0);
        }
    }
    return std::nullopt;
}

KMeansResult kmeans_1d_exact(const WeightedValues& points, int k) {
    // Below 8 clusters the layers cost no more than the search's few passes.
    if (k >= 8) {
        if (auto r = kmeans_1d_lagrangian(points, k)) return *std::move(r);
    }
    return kmeans_1d_layered(points, k);
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
    if (k * m <= options.exact_budget) return kmeans_1d_exact(points, k);
    return kmeans_1d_lloyd(points, k, seed, options);
}

}  // namespace anelm::quant

#include "quant/quant_error.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "quant/weight_rows.h"

namespace anelm::quant {

QuantError quant_error(const TensorView& w, const QuantizedMatrix& q, ThreadPool& pool) {
    const MatrixShape shape = matrix_shape(w);
    if (shape.n_out != q.n_out || shape.n_in != q.n_in)
        fail("quant_error: weight [{}, {}] against quantized [{}, {}]", shape.n_out, shape.n_in,
             q.n_out, q.n_in);
    struct Sums {
        double ww = 0, qq = 0, wq = 0, dd = 0, max_abs = 0;
    };
    constexpr int64_t rows_per_task = 64;
    const int64_t n_tasks = (shape.n_out + rows_per_task - 1) / rows_per_task;
    std::vector<Sums> sums(static_cast<size_t>(n_tasks));
    pool.run(n_tasks, [&](int64_t task, int) {
        std::vector<float> wr(static_cast<size_t>(shape.n_in)), qr(wr.size());
        Sums& s = sums[static_cast<size_t>(task)];
        const int64_t o_end = std::min(shape.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            read_row(w, shape, o, wr.data());
            q.decode_row(o, qr.data());
            for (size_t i = 0; i < wr.size(); ++i) {
                const double a = wr[i], b = qr[i];
                s.ww += a * a;
                s.qq += b * b;
                s.wq += a * b;
                s.dd += (a - b) * (a - b);
                s.max_abs = std::max(s.max_abs, std::fabs(a - b));
            }
        }
    });
    Sums total;
    for (const Sums& s : sums) {
        total.ww += s.ww;
        total.qq += s.qq;
        total.wq += s.wq;
        total.dd += s.dd;
        total.max_abs = std::max(total.max_abs, s.max_abs);
    }
    QuantError e;
    e.rel_rmse = total.ww > 0 ? std::sqrt(total.dd / total.ww) : std::sqrt(total.dd);
    e.cosine = total.ww > 0 && total.qq > 0 ? total.wq / std::sqrt(total.ww * total.qq)
               : total.ww == total.qq ? 1.0 : 0.0;
    e.max_abs = total.max_abs;
    return e;
}

}  // namespace anelm::quant

#include "convert/weight_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "io/ggml_types.h"
#include "quant/quantized_matrix.h"

namespace anelm {

namespace {

std::string stored_name(const TensorView& v) {
    return v.dtype == DType::blocks ? ggml_type_name(v.block_type)
                                    : std::string(dtype_name(v.dtype));
}

// Convert writes LUT palettes and f16, nothing else.
std::string written_name(const quant::QuantizedMatrix* q) {
    return q ? fmt::format("lut{}:{}", q->nbits, q->group_size) : "f16";
}

std::string shape_text(const std::vector<int64_t>& shape) {
    return fmt::format("{}", fmt::join(shape, "x"));
}

}  // namespace

std::vector<WeightReport> weight_reports(const ir::Program& program, const ir::Function& fn,
                                         ThreadPool& pool) {
    std::vector<WeightReport> out;
    std::set<ir::WeightId> seen;
    for (const ir::Node& node : fn.nodes) {
        if (node.op != ir::Op::embed && node.op != ir::Op::linear) continue;
        if (node.weight == ir::no_weight || !seen.insert(node.weight).second) continue;
        const ir::Weight& w = program.weights.at(static_cast<size_t>(node.weight));
        WeightReport r;
        r.name = w.name;
        r.shape = w.view.shape;
        r.stored = stored_name(w.view);
        r.written = written_name(w.quantized.get());
        r.error = w.quantized ? quant::quant_error(w.view, *w.quantized, pool)
                              : quant::half_rounding_error(w.view, pool);
        out.push_back(std::move(r));
    }
    return out;
}

std::string weight_report_table(const std::vector<WeightReport>& reports) {
    std::string text = fmt::format("{:<48} {:<14} {:<7} {:<8} {:>9} {:>9} {:>10}\n", "tensor",
                                   "shape", "stored", "written", "rel_rmse", "cosine", "max_abs");
    quant::QuantError total;
    for (const WeightReport& r : reports) {
        text += fmt::format("{:<48} {:<14} {:<7} {:<8} {:>9.5f} {:>9.6f} {:>10.3g}\n", r.name,
                            shape_text(r.shape), r.stored, r.written, r.error.rel_rmse(),
                            r.error.cosine(), r.error.max_abs);
        total += r.error;
    }
    text += fmt::format("total: {} matrices, rel_rmse {:.5f}, cosine {:.6f}, max_abs {:.3g}\n",
                        reports.size(), total.rel_rmse(), total.cosine(), total.max_abs);
    return text;
}

}  // namespace anelm

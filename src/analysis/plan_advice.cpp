// Which unit `anelm plan` recommends, and why. The reason quotes the numbers the
// table prints, so the advice cannot disagree with its own columns: first what
// rules a unit out, then decode speed, then joules per token where a power
// measurement gives them.
#include <fmt/format.h>

#include <algorithm>

#include "analysis/plan_cost.h"

namespace anelm::plan {

namespace {

// [notes] "Core AI": classic Core ML ANE models run 512-4K of context.
constexpr int64_t ane_max_ctx = 4096;

struct Margin {
    Unit winner;
    double ratio;  // >= 1: how many times better the winner is
};

Margin speed_margin(const ChipPlan& p) {
    if (p.ane.decode_tps >= p.gpu.decode_tps)
        return {Unit::ane, p.ane.decode_tps / p.gpu.decode_tps};
    return {Unit::gpu, p.gpu.decode_tps / p.ane.decode_tps};
}

Margin energy_margin(const ChipPlan& p) {
    if (p.ane.energy_j <= p.gpu.energy_j) return {Unit::ane, p.gpu.energy_j / p.ane.energy_j};
    return {Unit::gpu, p.ane.energy_j / p.gpu.energy_j};
}

const UnitSpeed& speed_of(const ChipPlan& p, Unit u) {
    return u == Unit::ane ? p.ane : p.gpu;
}

Unit other(Unit u) {
    return u == Unit::ane ? Unit::gpu : Unit::ane;
}

// "4.5x", "1.03x": two decimals below 2, so that a near tie does not read "1.0x faster".
std::string ratio_text(double ratio) {
    return ratio < 2 ? fmt::format("{:.2f}x", ratio) : fmt::format("{:.1f}x", ratio);
}

// "4.5x faster (305 vs 67 tok/s)": the winner's number first.
std::string faster_text(const ChipPlan& p, Margin m) {
    return fmt::format("{} faster ({} vs {} tok/s)", ratio_text(m.ratio),
                       tps_text(speed_of(p, m.winner).decode_tps),
                       tps_text(speed_of(p, other(m.winner)).decode_tps));
}

// "1.87x less energy (0.19 vs 0.36 J/token)"
std::string energy_text(const ChipPlan& p, Margin m) {
    return fmt::format("{} less energy ({} vs {} J/token)", ratio_text(m.ratio),
                       joules_text(speed_of(p, m.winner).energy_j),
                       joules_text(speed_of(p, other(m.winner)).energy_j));
}

// True when the chip or the context rules the ANE out; the reason says by what.
bool rule_out(ChipPlan& plan, const PlanInput& in) {
    const Chip& chip = plan.chip;
    plan.recommended = Unit::gpu;
    if (!plan.ane.available) {
        plan.basis = Basis::no_ane;
        plan.reason = fmt::format("no ANE bandwidth is published for {}", chip.name);
        return true;
    }
    if (in.n_ctx > ane_max_ctx) {
        plan.basis = Basis::context;
        plan.reason =
            fmt::format("context {} is past the 512-4K classic Core ML ANE models run", in.n_ctx);
        return true;
    }
    if (!plan.ane_fits()) {
        // Loaded for the ANE the model needs more than the smallest device with the chip
        // lets an app wire; the GPU needs one copy.
        plan.basis = Basis::memory;
        plan.reason = fmt::format(
            "the ANE would wire {:.1f} GB ({} functions per chunk), over the {:.1f} GB budget of "
            "the {:.0f} GB {}{}",
            plan.memory.ane_loaded() / 1e9, plan.memory.ane_functions,
            plan.memory_budget_bytes / 1e9, chip.ram_gib, chip.name,
            plan.gpu_fits() ? fmt::format("; the GPU needs {:.1f} GB", plan.memory.total() / 1e9)
                            : fmt::format("; the GPU's {:.1f} GB does not fit either",
                                          plan.memory.total() / 1e9));
        return true;
    }
    return false;
}

}  // namespace

const char* basis_name(Basis b) {
    switch (b) {
        case Basis::no_ane:
            return "no_ane";
        case Basis::context:
            return "context";
        case Basis::memory:
            return "memory";
        case Basis::speed:
            return "speed";
        case Basis::energy:
            return "energy";
    }
    return "?";
}

std::string tps_text(double tps) {
    return tps >= 100 ? fmt::format("{:.0f}", tps) : fmt::format("{:.1f}", tps);
}

std::string joules_text(double j) {
    return fmt::format("{:.2f}", j);
}

void recommend(ChipPlan& plan, const PlanInput& in) {
    if (rule_out(plan, in)) return;
    const Margin speed = speed_margin(plan);
    if (plan.ane.energy_j < 0 || plan.gpu.energy_j < 0) {
        plan.basis = Basis::speed;
        plan.recommended = speed.winner;
        plan.reason =
            fmt::format("{} decodes {}; no energy measurement for {}", unit_name(speed.winner),
                        faster_text(plan, speed), plan.chip.name);
        return;
    }
    plan.basis = Basis::energy;
    const Margin energy = energy_margin(plan);
    if (speed.winner == energy.winner) {
        plan.recommended = speed.winner;
        plan.reason = fmt::format("{} decodes {} and uses {}", unit_name(speed.winner),
                                  faster_text(plan, speed), energy_text(plan, energy));
    } else if (speed.ratio >= energy.ratio) {
        // Each unit wins one column: the larger margin decides.
        plan.recommended = speed.winner;
        plan.reason = fmt::format("{} decodes {}; the {} uses {}, a smaller margin",
                                  unit_name(speed.winner), faster_text(plan, speed),
                                  unit_name(energy.winner), energy_text(plan, energy));
    } else {
        plan.recommended = energy.winner;
        plan.reason = fmt::format("{} uses {}; the {} decodes {}, a smaller margin",
                                  unit_name(energy.winner), energy_text(plan, energy),
                                  unit_name(speed.winner), faster_text(plan, speed));
    }
}

}  // namespace anelm::plan

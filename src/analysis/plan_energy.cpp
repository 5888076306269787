// Package power while decoding. The only published energy measurement is Gemma 4
// E2B on M4 Max ([notes] "Decide": 0.48 J/token on the ANE, 0.24 with MLX on the
// GPU); the power it implies at the speed this model predicts for that run is
// used for other models on the same chip. Other chips report no energy.
#include "analysis/plan_cost.h"
#include "analysis/plan_validate.h"

namespace anelm::plan {

double decode_watts(const Chip& chip, Unit unit) {
    for (const PublishedPoint& p : published_points()) {
        if (p.metric != Metric::energy_j || p.unit != unit || p.chip != chip.name) continue;
        const PlanInput in = point_input(p);
        const UnitSpeed speed = unit == Unit::ane ? predict_ane(chip, in) : predict_gpu(chip, in);
        return p.value * speed.decode_tps;
    }
    return 0;
}

}  // namespace anelm::plan

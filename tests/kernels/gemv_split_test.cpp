// The row split of matrix-vector products: every row in exactly one task, in
// order, in blocks of 8 rows but the last, and long first runs when the rows
// are read once.
#include "kernels/gemv_split.h"

#include <gtest/gtest.h>

namespace anelm::kernels {
namespace {

void expect_partition(const GemvSplit& s, int64_t n_out) {
    ASSERT_GT(s.n_tasks(), 0);
    EXPECT_EQ(s.begin(0), 0);
    EXPECT_EQ(s.begin(s.n_tasks()), n_out);
    for (int64_t k = 0; k < s.n_tasks(); ++k) {
        const int64_t rows = s.begin(k + 1) - s.begin(k);
        EXPECT_GT(rows, 0) << "task " << k << " of " << s.n_tasks();
        if (k + 1 < s.n_tasks()) {
            EXPECT_EQ(rows % 8, 0) << "task " << k;
        }
    }
}

TEST(GemvSplit, TasksCoverEveryRowOnce) {
    for (int64_t n_out : {1, 7, 8, 20, 64, 100, 1000, 2048, 151936})
        for (int threads : {1, 2, 3, 8})
            for (int64_t n_tokens : {1, 4, 40}) {
                SCOPED_TRACE(testing::Message() << n_out << " rows, " << threads << " threads, "
                                                << n_tokens << " tokens");
                expect_partition(gemv_split(n_out, 4096, n_tokens, 4, threads), n_out);
            }
}

TEST(GemvSplit, OnePassStartsEachThreadOnSevenEighthsOfItsShare) {
    const GemvSplit s = gemv_split(8192, 4096, 1, 4, 2);
    EXPECT_EQ(s.begin(1) - s.begin(0), 3584);
    EXPECT_EQ(s.begin(2) - s.begin(1), 3584);
    EXPECT_EQ(s.n_tasks(), 2 + 4);  // the last eighth in two pieces per thread
    EXPECT_EQ(s.begin(3) - s.begin(2), 256);
}

TEST(GemvSplit, SeveralPassesTakeTasksOfAbout64KiB) {
    const GemvSplit s = gemv_split(8192, 4096, 40, 4, 2);
    EXPECT_EQ(s.begin(1) - s.begin(0), 16);
    EXPECT_EQ(s.n_tasks(), 8192 / 16);
}

}  // namespace
}  // namespace anelm::kernels

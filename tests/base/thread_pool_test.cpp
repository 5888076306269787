#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace anelm {
namespace {

// Runs n_tasks tasks and checks each ran once, on a thread index in range.
void expect_each_task_once(ThreadPool& pool, int64_t n_tasks) {
    std::vector<std::atomic<int>> runs(static_cast<size_t>(n_tasks));
    std::atomic<bool> thread_in_range{true};
    pool.run(n_tasks, [&](int64_t task, int thread) {
        runs[static_cast<size_t>(task)].fetch_add(1);
        if (thread < 0 || thread >= pool.size()) thread_in_range = false;
    });
    for (int64_t t = 0; t < n_tasks; ++t) EXPECT_EQ(runs[static_cast<size_t>(t)].load(), 1) << t;
    EXPECT_TRUE(thread_in_range.load());
}

TEST(ThreadPool, EveryTaskRunsExactlyOnce) {
    for (int n_threads : {1, 2, 3, 4}) {
        ThreadPool pool(n_threads);
        EXPECT_EQ(pool.size(), n_threads);
        for (int64_t n_tasks : {1, 2, 3, 7, 100, 1000}) expect_each_task_once(pool, n_tasks);
    }
}

TEST(ThreadPool, ZeroTasksCallsNothing) {
    ThreadPool pool(3);
    bool called = false;
    pool.run(0, [&](int64_t, int) { called = true; });
    EXPECT_FALSE(called);
}

TEST(ThreadPool, FewerTasksThanThreads) {
    ThreadPool pool(4);
    for (int i = 0; i < 50; ++i) expect_each_task_once(pool, 2);
}

TEST(ThreadPool, ManySequentialRunsStayCorrect) {
    ThreadPool pool(3);
    int64_t total = 0;
    for (int i = 0; i < 2000; ++i) {
        std::atomic<int64_t> sum{0};
        pool.run(i % 13, [&](int64_t task, int) { sum += task + 1; });
        const int64_t n = i % 13;
        EXPECT_EQ(sum.load(), n * (n + 1) / 2);
        total += sum.load();
    }
    EXPECT_GT(total, 0);
}

TEST(ThreadPool, ConcurrentTasksHaveDistinctThreadIndices) {
    ThreadPool pool(3);
    std::vector<std::atomic<int>> busy(3);
    std::atomic<bool> shared{false};
    pool.run(300, [&](int64_t, int thread) {
        if (busy[static_cast<size_t>(thread)].fetch_add(1) != 0) shared = true;
        std::this_thread::sleep_for(std::chrono::microseconds(20));
        busy[static_cast<size_t>(thread)].fetch_sub(1);
    });
    EXPECT_FALSE(shared.load());
}

TEST(ThreadPool, NestedRunRunsInlineOnTheSameThread) {
    ThreadPool pool(2);
    std::vector<std::atomic<int>> runs(8 * 5);
    std::atomic<bool> same_thread{true};
    pool.run(8, [&](int64_t outer, int thread) {
        pool.run(5, [&](int64_t inner, int inner_thread) {
            runs[static_cast<size_t>(outer * 5 + inner)].fetch_add(1);
            if (inner_thread != thread) same_thread = false;
        });
    });
    for (auto& r : runs) EXPECT_EQ(r.load(), 1);
    EXPECT_TRUE(same_thread.load());
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
    ThreadPool pool(2);
    expect_each_task_once(pool, 10);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // past the spin phase
    expect_each_task_once(pool, 10);
}

TEST(ThreadPool, CallerWaitsPastItsSpinForASlowTask) {
    ThreadPool pool(3);
    for (int rep = 0; rep < 5; ++rep) {
        std::vector<std::atomic<int>> finished(6);
        pool.run(6, [&](int64_t task, int) {
            if (task == 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
            finished[static_cast<size_t>(task)] = 1;
        });
        for (auto& f : finished) EXPECT_EQ(f.load(), 1);
    }
}

TEST(ThreadPool, TaskExceptionReachesTheCaller) {
    ThreadPool pool(2);
    EXPECT_THROW(pool.run(10,
                          [](int64_t task, int) {
                              if (task == 7) throw std::runtime_error("task 7");
                          }),
                 std::runtime_error);
    expect_each_task_once(pool, 10);  // still usable
}

TEST(ThreadPool, PhysicalCoresIsPositive) {
    EXPECT_GE(ThreadPool::physical_cores(), 1);
}

}  // namespace
}  // namespace anelm

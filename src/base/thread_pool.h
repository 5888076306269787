// A persistent pool of worker threads. The caller's thread takes part in every
// run, so a pool of N threads has N - 1 workers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace anelm {

class ThreadPool {
public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const;

    // Calls fn(task, thread) for every task in [0, n_tasks) and returns when all
    // are done. `thread` is in [0, size()) and unique among concurrent calls.
    void run(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

    // The number of physical cores (the default for --threads).
    static int physical_cores();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace anelm

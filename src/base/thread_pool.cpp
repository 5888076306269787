#include "base/thread_pool.h"

#include "base/error.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace anelm {

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// How long a waiting thread spins before it sleeps. Decode calls run() a few
// hundred times per token with short serial gaps between, so an idle worker
// that is still spinning wakes in ~100 ns instead of a futex's ~50 us. The
// caller waiting for the last tasks spins less: those usually end within a
// task's length, and a sleeping waiter leaves its core (and its process's
// share of a busy machine) to the threads that still have work.
constexpr auto worker_spin = std::chrono::microseconds(100);
constexpr auto caller_spin = std::chrono::microseconds(20);

// A condition to wait for: spin briefly, then sleep until woken.
struct WaitPoint {
    std::mutex mutex;
    std::condition_variable cv;
    std::atomic<int> n_sleeping{0};

    // `ready` must read with seq_cst, so it is ordered against wake().
    template <typename Ready>
    void wait(Ready ready, std::chrono::microseconds spin) {
        const auto start = std::chrono::steady_clock::now();
        for (int spins = 1; !ready(); ++spins) {
            cpu_relax();
            if (spins % 64 == 0 && std::chrono::steady_clock::now() - start > spin) {
                std::unique_lock lock(mutex);
                n_sleeping.fetch_add(1);
                cv.wait(lock, ready);
                n_sleeping.fetch_sub(1);
                return;
            }
        }
    }

    // Call after making the condition true with a seq_cst store or RMW.
    void wake() {
        if (n_sleeping.load() == 0) return;
        { std::lock_guard lock(mutex); }
        cv.notify_all();
    }
};

// The pool and thread index this thread is running tasks for, so a nested run()
// on the same pool runs inline (keeping its unique index) instead of waiting on
// itself.
struct Current {
    const void* pool = nullptr;
    int thread = 0;
};
thread_local Current current;

}  // namespace

struct ThreadPool::Impl {
    int n_threads = 1;
    std::vector<std::thread> workers;

    // One run at a time; callers from different threads queue here.
    std::mutex run_mutex;

    // The job. Both `cursor` (next task index) and `limit` (task count) carry
    // the job's generation in their high 32 bits. A worker claims a task with a
    // compare-exchange that also checks the generation, so a late worker can
    // never run a task of one job with the function of another.
    // Each on its own cache line: idle workers poll `generation` while busy
    // ones claim tasks on `cursor`.
    alignas(64) std::atomic<uint64_t> cursor{0};
    std::atomic<uint64_t> limit{0};
    alignas(64) std::atomic<uint32_t> generation{0};
    alignas(64) std::atomic<int64_t> n_done{0};
    const std::function<void(int64_t, int)>* fn = nullptr;
    // The first exception a task threw, rethrown by run() once all tasks ended.
    std::mutex error_mutex;
    std::exception_ptr error;

    WaitPoint idle;  // workers waiting for a job
    WaitPoint done;  // the caller waiting for the last tasks
    std::atomic<bool> stopping{false};

    // Claims and runs tasks of generation `gen` until none are left, then
    // reports how many it ran (once, to keep the counter's cache line quiet).
    void work(uint32_t gen, int thread) {
        const Current outer = std::exchange(current, Current{this, thread});
        int64_t n_ran = 0;
        uint64_t cur = cursor.load(std::memory_order_acquire);
        for (;;) {
            const uint64_t lim = limit.load(std::memory_order_acquire);
            if (cur >> 32 != gen || lim >> 32 != gen) break;
            if ((cur & 0xffffffffu) >= (lim & 0xffffffffu)) break;
            if (!cursor.compare_exchange_weak(cur, cur + 1, std::memory_order_acq_rel,
                                              std::memory_order_acquire)) {
                continue;
            }
            try {
                (*fn)(static_cast<int64_t>(cur & 0xffffffffu), thread);
            } catch (...) {
                std::lock_guard lock(error_mutex);
                if (!error) error = std::current_exception();
            }
            ++n_ran;
            cur = cursor.load(std::memory_order_acquire);
        }
        if (n_ran > 0) {
            n_done.fetch_add(n_ran);
            done.wake();
        }
        current = outer;
    }

    void worker_loop(int thread) {
        uint32_t seen = 0;
        for (;;) {
            idle.wait([&] { return generation.load() != seen || stopping.load(); }, worker_spin);
            if (stopping.load()) return;
            seen = generation.load();
            work(seen, thread);
        }
    }
};

ThreadPool::ThreadPool(int n_threads) : impl_(std::make_unique<Impl>()) {
    impl_->n_threads = std::max(1, n_threads);
    for (int t = 1; t < impl_->n_threads; ++t) {
        impl_->workers.emplace_back([this, t] { impl_->worker_loop(t); });
    }
}

ThreadPool::~ThreadPool() {
    impl_->stopping.store(true);
    impl_->idle.wake();
    for (auto& w : impl_->workers) w.join();
}

int ThreadPool::size() const {
    return impl_->n_threads;
}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn) {
    if (n_tasks <= 0) return;
    Impl& p = *impl_;
    // Serial cases: one task, one thread, or a task of this pool calling back in.
    // A nested call keeps the caller's thread index, which stays unique.
    if (n_tasks == 1 || p.n_threads == 1 || current.pool == &p) {
        const int thread = current.pool == &p ? current.thread : 0;
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, thread);
        return;
    }
    if (n_tasks > 0xffffffffll) fail("ThreadPool::run: {} tasks, at most 2^32 - 1", n_tasks);
    std::lock_guard run_lock(p.run_mutex);
    const uint32_t gen = p.generation.load() + 1;
    const uint64_t tag = static_cast<uint64_t>(gen) << 32;
    p.fn = &fn;
    p.n_done.store(0, std::memory_order_relaxed);
    p.limit.store(tag | static_cast<uint64_t>(n_tasks), std::memory_order_release);
    p.cursor.store(tag, std::memory_order_release);
    p.generation.store(gen);
    p.idle.wake();
    p.work(gen, 0);
    p.done.wait([&] { return p.n_done.load() >= n_tasks; }, caller_spin);
    if (p.error) std::rethrow_exception(std::exchange(p.error, nullptr));
}

int ThreadPool::physical_cores() {
    int n = 0;
#if defined(__APPLE__)
    int value = 0;
    size_t len = sizeof(value);
    if (sysctlbyname("hw.physicalcpu", &value, &len, nullptr, 0) == 0) n = value;
#elif defined(__linux__)
    // Distinct (package, core) pairs; hyperthreads share both.
    std::set<std::pair<std::string, std::string>> cores;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/cpu", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() < 4 || name.compare(0, 3, "cpu") != 0 ||
            name.find_first_not_of("0123456789", 3) != std::string::npos) {
            continue;
        }
        std::ifstream core(entry.path() / "topology" / "core_id");
        std::ifstream package(entry.path() / "topology" / "physical_package_id");
        std::string core_id, package_id;
        if (core >> core_id && package >> package_id) cores.emplace(package_id, core_id);
    }
    n = static_cast<int>(cores.size());
#endif
    if (n <= 0) n = static_cast<int>(std::thread::hardware_concurrency());
    return std::max(1, n);
}

}  // namespace anelm

// The scheduler behind the server: requests wait for a free slot; each step
// runs the next token of every active request and a chunk of a waiting prompt
// as one batched pass, so the weights are read once per step for all of them. A slot
// keeps its cache after a request; the next request sharing a prefix with it
// (a chat's next turn) feeds only what differs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/drafter.h"
#include "runtime/sampler.h"
#include "server/slot_model.h"
#include "tokenizer/tokenizer.h"

namespace anelm::server {

// Restricts what may be generated (structured output): masks the logits of
// tokens that may not come next, and learns each token chosen.
class Constraint {
public:
    virtual ~Constraint() = default;
    virtual void mask(std::span<float> logits) = 0;
    virtual void accept(int32_t token) = 0;
    virtual bool finished() const = 0;  // nothing more may follow
};

struct TokenLogprob {
    int32_t id = 0;
    float logprob = 0;
    std::vector<std::pair<int32_t, float>> top;  // the most likely ids, best first
};

// What a request receives as it runs.
struct Event {
    std::string text;                    // new text to show (may be empty)
    std::vector<TokenLogprob> logprobs;  // the tokens behind it, when asked
    bool done = false;
    std::string finish_reason;  // "stop" or "length" when done
    std::string stop_sequence;  // the stop string that ended it, if one did
    std::string error;          // when done because the generation failed
};

struct JobSpec {
    std::vector<int32_t> prompt;
    int64_t max_tokens = -1;  // -1: until the context is full
    SamplerParams sampler;
    std::vector<std::string> stop;
    bool logprobs = false;
    int top_logprobs = 0;
    std::unique_ptr<Constraint> constraint;  // null: free text
};

struct JobUsage {
    int64_t prompt_tokens = 0;
    int64_t cached_tokens = 0;  // of the prompt, found in a slot's cache
    int64_t completion_tokens = 0;
};

class Job {
public:
    // Waits up to `timeout` for events and moves them into out; false when none came.
    bool wait(std::vector<Event>& out, std::chrono::milliseconds timeout);
    // Ends the generation at the next step (the client went away).
    void cancel() { cancelled_ = true; }
    bool cancelled() const { return cancelled_; }
    JobUsage usage() const;

private:
    friend class Engine;
    void push(Event event);

    mutable std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<Event> events_;
    std::atomic<bool> cancelled_{false};
    JobUsage usage_;
    JobSpec spec_;
};

// Speculative decoding in the server: prompt lookup over n-grams of up to
// `lookup` tokens (0: off), up to draft_n drafts per request and step.
struct Speculation {
    int lookup = 0;
    int64_t draft_n = 3;
};

struct SpeculationStats {
    int64_t verify_passes = 0;
    int64_t drafted = 0;   // tokens drafted into them
    int64_t accepted = 0;  // drafts the requests kept
};

// Where the engine's time has gone, for /metrics. A step that carries a
// prompt chunk counts as prompt time (with the decode rows riding in it);
// steps and verify passes of decode rows alone as decode time, so that
// decode_tokens / decode_seconds is the rate of decoding alone.
struct EngineStats {
    int64_t prompt_tokens = 0;
    double prompt_seconds = 0;
    int64_t decode_tokens = 0;  // generated in decode-only steps
    double decode_seconds = 0;
    int64_t tokens_predicted = 0;  // generated in all
};

// What the engine is doing now, for /health.
struct EngineLoad {
    int processing = 0;  // slots with a request
    size_t waiting = 0;  // requests queued for a slot
};

class Engine {
public:
    Engine(SlotModel& model, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids,
           int64_t prefill_chunk = 512, Speculation speculation = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    // Queues a request. Throws ApiError when its prompt does not fit the context.
    std::shared_ptr<Job> submit(JobSpec spec);
    // One unit vector per input, computed between steps: the inputs of every
    // request waiting then run together. Throws ApiError for an input with no
    // tokens or more than the context, or a model that cannot embed.
    std::vector<std::vector<float>> embed(std::vector<std::vector<int32_t>> inputs);
    int64_t embedding_dims() const { return model_.embedding_dims(); }
    int64_t n_ctx() const { return model_.n_ctx(); }
    int slots() const { return model_.slots(); }
    EngineLoad load() const;
    SpeculationStats speculation_stats() const;
    EngineStats stats() const;

private:
    struct Slot;
    void loop();
    void admit(std::unique_lock<std::mutex>& lock);
    // A failure ends every running request; the slots start afresh.
    void fail_running(const std::string& why);
    void step();
    // Runs the waiting embedding requests as one batch.
    void run_embeddings(std::unique_lock<std::mutex>& lock);
    // With drafts for some decoding request: every decoding request's next
    // token and drafts in one verify pass (prompts wait a step); false when
    // none drafted, and step goes on as usual.
    bool speculate();
    // Picks the next token from a slot's logits and tells its job.
    void next_token(Slot& slot, std::span<const float> logits);
    // Tells the job it is done, with what is left of its text, and frees the slot.
    void finish(Slot& slot, const std::string& reason, Event last = {});

    SlotModel& model_;
    const Tokenizer& tokenizer_;
    std::vector<int32_t> stop_ids_;
    int64_t prefill_chunk_;
    std::vector<std::unique_ptr<Slot>> slots_;
    uint64_t step_ = 0;  // for least-recently-used slot choice

    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> pending_;
    struct EmbedRequest {
        std::vector<std::vector<int32_t>> inputs;
        std::promise<std::vector<std::vector<float>>> vectors;
    };
    std::deque<EmbedRequest> embed_requests_;
    bool stopping_ = false;
    std::atomic<int> processing_{0};  // slots whose job is set (the engine thread changes them)
    std::thread thread_;

    Speculation speculation_;
    std::unique_ptr<Drafter> drafter_;  // null: no speculation
    std::atomic<int64_t> verify_passes_{0}, drafted_{0}, accepted_{0};
    // EngineStats, the times in microseconds.
    std::atomic<int64_t> prompt_tokens_{0}, prompt_us_{0}, decode_tokens_{0}, decode_us_{0},
        predicted_{0};
    // Adds a pass's time and tokens to the prompt or the decode counters.
    void count_pass(std::chrono::steady_clock::time_point start, int64_t prompt_tokens,
                    int64_t predicted_before);
    std::vector<float> masked_;  // a slot's logits under its constraint
    std::vector<int> batch_slots_;
    std::vector<int32_t> batch_tokens_;
    std::vector<int64_t> batch_counts_;
};

}  // namespace anelm::server

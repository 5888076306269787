#include "server/engine.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "server/api_error.h"
#include "server/stop_text.h"

namespace anelm::server {

// One sequence of the model and the request it is serving, if any.
struct Engine::Slot {
    int index = 0;
    std::vector<int32_t> cached;  // the tokens whose keys and values the cache holds
    uint64_t last_used = 0;

    std::shared_ptr<Job> job;  // null when free
    size_t prefilled = 0;      // prompt tokens in the cache
    bool decoding = false;     // the next step feeds `next`
    int32_t next = 0;
    std::vector<int32_t> history;  // prompt and generated tokens, for the penalties
    int64_t generated = 0;
    int64_t max_tokens = 0;
    std::unique_ptr<Sampler> sampler;
    std::unique_ptr<StreamDecoder> decoder;
    std::unique_ptr<StopText> stop_text;
};

namespace {

void release_free_memory() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

// Log-probabilities of the chosen id and the top ones, from raw logits.
TokenLogprob logprobs_of(std::span<const float> logits, int32_t id, int top) {
    float max = -INFINITY;
    for (float x : logits) max = std::max(max, x);
    double sum = 0;
    for (float x : logits) sum += std::exp(static_cast<double>(x - max));
    const float log_z = max + static_cast<float>(std::log(sum));
    TokenLogprob lp;
    lp.id = id;
    lp.logprob = logits[static_cast<size_t>(id)] - log_z;
    if (top > 0) {
        std::vector<std::pair<float, int32_t>> best;
        for (size_t i = 0; i < logits.size(); ++i) {
            best.emplace_back(logits[i], static_cast<int32_t>(i));
            std::push_heap(best.begin(), best.end(), std::greater<>());
            if (best.size() > static_cast<size_t>(top)) {
                std::pop_heap(best.begin(), best.end(), std::greater<>());
                best.pop_back();
            }
        }
        std::sort(best.begin(), best.end(), std::greater<>());
        for (const auto& [x, i] : best) lp.top.emplace_back(i, x - log_z);
    }
    return lp;
}

}  // namespace

bool Job::wait(std::vector<Event>& out, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
    for (Event& e : events_) out.push_back(std::move(e));
    events_.clear();
    return true;
}

JobUsage Job::usage() const {
    std::lock_guard lock(mutex_);
    return usage_;
}

void Job::push(Event event) {
    {
        std::lock_guard lock(mutex_);
        events_.push_back(std::move(event));
    }
    ready_.notify_all();
}

Engine::Engine(SlotModel& model, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids,
               int64_t prefill_chunk, Speculation speculation)
    : model_(model),
      tokenizer_(tokenizer),
      stop_ids_(std::move(stop_ids)),
      prefill_chunk_(std::max<int64_t>(prefill_chunk, 1)),
      speculation_(speculation) {
    if (speculation.lookup > 0) {
        if (model.verify_rows() < 2) fail("--lookup: this model cannot verify drafted tokens");
        if (speculation.draft_n < 1)
            fail("--draft-n: {}, expected at least 1", speculation.draft_n);
        drafter_ = std::make_unique<LookupDrafter>(speculation.lookup);
    }
    for (int i = 0; i < model.slots(); ++i) {
        slots_.push_back(std::make_unique<Slot>());
        slots_.back()->index = i;
    }
    thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

std::shared_ptr<Job> Engine::submit(JobSpec spec) {
    const auto n = static_cast<int64_t>(spec.prompt.size());
    if (n == 0) bad_field("prompt", "the prompt has no tokens");
    if (n >= model_.n_ctx())
        throw ApiError(400, "invalid_request_error", "context_length_exceeded", "messages",
                       fmt::format("the prompt has {} tokens; the context holds {} (--ctx), "
                                   "leaving no room to generate",
                                   n, model_.n_ctx()));
    auto job = std::make_shared<Job>();
    job->usage_.prompt_tokens = n;
    job->spec_ = std::move(spec);
    {
        std::lock_guard lock(mutex_);
        pending_.push_back(job);
    }
    wake_.notify_all();
    return job;
}

std::vector<std::vector<float>> Engine::embed(std::vector<std::vector<int32_t>> inputs) {
    if (model_.embedding_dims() == 0) bad_field("model", "this model cannot embed");
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto n = static_cast<int64_t>(inputs[i].size());
        if (n == 0) bad_field("input", "input {} has no tokens", i);
        if (n > model_.n_ctx())
            throw ApiError(400, "invalid_request_error", "context_length_exceeded", "input",
                           fmt::format("input {} has {} tokens; the context holds {} (--ctx)", i, n,
                                       model_.n_ctx()));
    }
    std::future<std::vector<std::vector<float>>> done;
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw ApiError(503, "server_error", "", "", "the server is shutting down");
        embed_requests_.push_back({std::move(inputs), {}});
        done = embed_requests_.back().vectors.get_future();
    }
    wake_.notify_all();
    return done.get();
}

void Engine::run_embeddings(std::unique_lock<std::mutex>& lock) {
    if (embed_requests_.empty()) return;
    std::deque<EmbedRequest> requests = std::move(embed_requests_);
    embed_requests_.clear();
    lock.unlock();
    std::vector<std::vector<int32_t>> inputs;
    for (const EmbedRequest& r : requests)
        inputs.insert(inputs.end(), r.inputs.begin(), r.inputs.end());
    std::vector<std::vector<float>> vectors;
    try {
        vectors = model_.embed(inputs);
    } catch (const std::exception& e) {
        for (EmbedRequest& r : requests)
            r.vectors.set_exception(std::make_exception_ptr(ApiError(
                500, "server_error", "", "", fmt::format("embedding failed: {}", e.what()))));
        lock.lock();
        return;
    }
    auto next = vectors.begin();
    for (EmbedRequest& r : requests) {
        const auto end = next + static_cast<std::ptrdiff_t>(r.inputs.size());
        r.vectors.set_value({std::make_move_iterator(next), std::make_move_iterator(end)});
        next = end;
    }
    lock.lock();
}

EngineLoad Engine::load() const {
    std::lock_guard lock(mutex_);
    return {processing_.load(), pending_.size()};
}

void Engine::loop() {
    while (true) {
        {
            std::unique_lock lock(mutex_);
            const auto busy = [&] {
                return std::any_of(slots_.begin(), slots_.end(), [](auto& s) { return s->job; });
            };
            const auto woken = [&] {
                return stopping_ || !pending_.empty() || !embed_requests_.empty() || busy();
            };
            if (!woken()) {
                // Idle after a burst: what the requests freed goes back to the system.
                release_free_memory();
                wake_.wait(lock, woken);
            }
            if (stopping_) break;
            run_embeddings(lock);
            try {
                admit(lock);
            } catch (const std::exception& e) {
                fail_running(e.what());
                continue;
            }
        }
        try {
            step();
        } catch (const std::exception& e) {
            fail_running(e.what());
        }
    }
    std::lock_guard lock(mutex_);
    for (EmbedRequest& r : embed_requests_)
        r.vectors.set_exception(std::make_exception_ptr(
            ApiError(503, "server_error", "", "", "the server is shutting down")));
    for (auto& slot : slots_)
        if (slot->job) pending_.push_back(slot->job);
    for (auto& job : pending_) {
        Event ev;
        ev.done = true;
        ev.error = "the server is shutting down";
        job->push(std::move(ev));
    }
}

void Engine::fail_running(const std::string& why) {
    for (auto& slot : slots_) {
        if (slot->job) {
            Event ev;
            ev.done = true;
            ev.error = why;
            slot->job->push(std::move(ev));
            slot->job.reset();
            --processing_;
        }
        slot->cached.clear();
        slot->decoding = false;
    }
}

// Moves waiting requests into free slots, each into the one whose cache
// shares the longest prefix with its prompt (else the least recently used).
void Engine::admit(std::unique_lock<std::mutex>&) {
    while (!pending_.empty()) {
        std::shared_ptr<Job> job = pending_.front();
        if (job->cancelled()) {
            Event ev;
            ev.done = true;
            ev.finish_reason = "stop";
            job->push(std::move(ev));
            pending_.pop_front();
            continue;
        }
        const std::vector<int32_t>& prompt = job->spec_.prompt;
        Slot* best = nullptr;
        size_t best_shared = 0;
        for (auto& s : slots_) {
            if (s->job) continue;
            const size_t shared = static_cast<size_t>(
                std::mismatch(s->cached.begin(), s->cached.end(), prompt.begin(), prompt.end())
                    .first -
                s->cached.begin());
            if (!best || shared > best_shared ||
                (shared == best_shared && s->last_used < best->last_used)) {
                best = s.get();
                best_shared = shared;
            }
        }
        if (!best) return;
        pending_.pop_front();

        Slot& slot = *best;
        // At least the prompt's last token is fed again, for its logits.
        const int64_t keep = model_.keepable(
            slot.index, static_cast<int64_t>(std::min(best_shared, prompt.size() - 1)));
        model_.rewind(slot.index, keep);
        slot.cached.resize(static_cast<size_t>(keep));
        slot.prefilled = static_cast<size_t>(keep);
        {
            std::lock_guard usage_lock(job->mutex_);  // the HTTP thread may read the usage
            job->usage_.cached_tokens = keep;
        }

        JobSpec& spec = job->spec_;
        const int64_t room = model_.n_ctx() - static_cast<int64_t>(prompt.size());
        slot.max_tokens = spec.max_tokens < 0 ? room : std::min(spec.max_tokens, room);
        slot.job = std::move(job);
        ++processing_;
        slot.decoding = false;
        slot.generated = 0;
        slot.history = prompt;
        slot.sampler = std::make_unique<Sampler>(spec.sampler);
        slot.decoder = std::make_unique<StreamDecoder>(tokenizer_);
        // The prompt's tail is the context of the first pieces (a leading space).
        for (size_t i = prompt.size() - std::min<size_t>(prompt.size(), 8); i < prompt.size(); ++i)
            slot.decoder->push(prompt[i]);
        slot.stop_text = std::make_unique<StopText>(spec.stop);
        slot.last_used = ++step_;
    }
}

SpeculationStats Engine::speculation_stats() const {
    return {verify_passes_.load(), drafted_.load(), accepted_.load()};
}

EngineStats Engine::stats() const {
    return {prompt_tokens_.load(), static_cast<double>(prompt_us_.load()) / 1e6,
            decode_tokens_.load(), static_cast<double>(decode_us_.load()) / 1e6, predicted_.load()};
}

void Engine::count_pass(std::chrono::steady_clock::time_point start, int64_t prompt_tokens,
                        int64_t predicted_before) {
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (prompt_tokens > 0) {
        prompt_tokens_ += prompt_tokens;
        prompt_us_ += us;
    } else {
        decode_tokens_ += predicted_ - predicted_before;
        decode_us_ += us;
    }
}

bool Engine::speculate() {
    if (!drafter_) return false;
    // A waiting prompt goes first, in a step of its own kind.
    for (auto& s : slots_)
        if (s->job && !s->decoding) return false;
    std::vector<Slot*> decoding;
    for (auto& s : slots_) {
        if (!s->job || !s->decoding) continue;
        if (s->job->cancelled()) {
            finish(*s, "stop");
            continue;
        }
        decoding.push_back(s.get());
    }
    if (decoding.empty()) return false;
    batch_slots_.clear();
    batch_tokens_.clear();
    batch_counts_.clear();
    // The verify pass's rows, shared out; a request drafts no further than it may generate.
    const int64_t share = model_.verify_rows() / static_cast<int64_t>(decoding.size());
    bool drafted = false;
    for (Slot* s : decoding) {
        const int64_t k =
            std::min({speculation_.draft_n, share - 1, s->max_tokens - s->generated - 1});
        std::vector<int32_t> drafts;
        if (!s->job->spec_.constraint && k > 0 && model_.can_verify(s->index, k + 1))
            drafts = drafter_->draft(s->history, k);
        if (!model_.can_verify(s->index, 1 + static_cast<int64_t>(drafts.size()))) return false;
        drafted |= !drafts.empty();
        batch_slots_.push_back(s->index);
        batch_tokens_.push_back(s->next);
        batch_tokens_.insert(batch_tokens_.end(), drafts.begin(), drafts.end());
        batch_counts_.push_back(1 + static_cast<int64_t>(drafts.size()));
    }
    if (!drafted) return false;
    const auto began = std::chrono::steady_clock::now();
    const int64_t predicted_before = predicted_;
    const std::span<const float> logits = model_.verify(batch_slots_, batch_tokens_, batch_counts_);
    ++verify_passes_;
    drafted_ += static_cast<int64_t>(batch_tokens_.size() - batch_slots_.size());
    const size_t n_vocab = logits.size() / batch_tokens_.size();
    size_t at = 0;
    for (size_t i = 0; i < batch_slots_.size(); ++i) {
        Slot& slot = *slots_[static_cast<size_t>(batch_slots_[i])];
        const auto count = static_cast<size_t>(batch_counts_[i]);
        const int64_t start = model_.pos(slot.index) - static_cast<int64_t>(count);
        // Rows are taken while the request's own sample equals the next draft.
        size_t kept = 0;
        while (kept < count) {
            next_token(slot, logits.subspan((at + kept) * n_vocab, n_vocab));
            ++kept;
            if (!slot.job || kept == count || slot.next != batch_tokens_[at + kept]) break;
            ++accepted_;
        }
        slot.cached.insert(slot.cached.end(), batch_tokens_.begin() + static_cast<long>(at),
                           batch_tokens_.begin() + static_cast<long>(at + kept));
        model_.rewind(slot.index, start + static_cast<int64_t>(kept));
        at += count;
    }
    count_pass(began, 0, predicted_before);
    return true;
}

// One pass: the next token of every generating slot and, in the room left,
// a chunk of one waiting prompt, so a long prompt delays the others by one
// chunk at a time and a new request starts without waiting for a free step.
void Engine::step() {
    if (speculate()) return;
    batch_slots_.clear();
    batch_tokens_.clear();
    batch_counts_.clear();
    for (auto& s : slots_) {
        if (!s->job || !s->decoding) continue;
        if (s->job->cancelled()) {
            finish(*s, "stop");
            continue;
        }
        batch_slots_.push_back(s->index);
        batch_tokens_.push_back(s->next);
        batch_counts_.push_back(1);
    }
    Slot* prompt_slot = nullptr;
    for (auto& s : slots_)
        if (s->job && !s->decoding && (!prompt_slot || s->last_used < prompt_slot->last_used))
            prompt_slot = s.get();
    if (prompt_slot && prompt_slot->job->cancelled()) {
        finish(*prompt_slot, "stop");
        prompt_slot = nullptr;
    }
    const auto room = model_.max_tokens() - static_cast<int64_t>(batch_tokens_.size());
    int64_t prompt_tokens = 0;
    if (prompt_slot && static_cast<int>(batch_slots_.size()) < model_.max_segments() && room > 0) {
        const std::vector<int32_t>& prompt = prompt_slot->job->spec_.prompt;
        const auto n = std::min({prompt.size() - prompt_slot->prefilled,
                                 static_cast<size_t>(prefill_chunk_), static_cast<size_t>(room)});
        batch_slots_.push_back(prompt_slot->index);
        batch_tokens_.insert(batch_tokens_.end(), prompt.begin() + prompt_slot->prefilled,
                             prompt.begin() + prompt_slot->prefilled + n);
        batch_counts_.push_back(prompt_tokens = static_cast<int64_t>(n));
    }
    if (batch_slots_.empty()) return;
    const auto began = std::chrono::steady_clock::now();
    const int64_t predicted_before = predicted_;
    const std::span<const float> logits = model_.step(batch_slots_, batch_tokens_, batch_counts_);
    const size_t n_vocab = logits.size() / batch_slots_.size();
    size_t at = 0;
    for (size_t i = 0; i < batch_slots_.size(); ++i) {
        Slot& slot = *slots_[static_cast<size_t>(batch_slots_[i])];
        const auto n = static_cast<size_t>(batch_counts_[i]);
        slot.cached.insert(slot.cached.end(), batch_tokens_.begin() + at,
                           batch_tokens_.begin() + at + n);
        at += n;
        if (!slot.decoding) {
            slot.prefilled += n;
            if (slot.prefilled < slot.job->spec_.prompt.size()) continue;
        }
        next_token(slot, logits.subspan(i * n_vocab, n_vocab));
    }
    count_pass(began, prompt_tokens, predicted_before);
}

void Engine::next_token(Slot& slot, std::span<const float> logits) {
    JobSpec& spec = slot.job->spec_;
    std::span<const float> choose_from = logits;
    if (spec.constraint) {
        masked_.assign(logits.begin(), logits.end());
        spec.constraint->mask(masked_);
        choose_from = masked_;
    }
    const int32_t id = slot.sampler->sample(choose_from, slot.history);
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end())
        return finish(slot, "stop");

    Event ev;
    if (spec.logprobs) ev.logprobs.push_back(logprobs_of(logits, id, spec.top_logprobs));
    slot.history.push_back(id);
    ++slot.generated;
    ++predicted_;
    {
        std::lock_guard lock(slot.job->mutex_);
        slot.job->usage_.completion_tokens = slot.generated;
    }
    if (spec.constraint) spec.constraint->accept(id);
    ev.text = slot.stop_text->push(slot.decoder->push(id));
    if (slot.stop_text->stopped() || (spec.constraint && spec.constraint->finished()))
        return finish(slot, "stop", std::move(ev));
    if (slot.generated >= slot.max_tokens) return finish(slot, "length", std::move(ev));
    slot.job->push(std::move(ev));
    slot.next = id;
    slot.decoding = true;
}

void Engine::finish(Slot& slot, const std::string& reason, Event ev) {
    if (!slot.stop_text->stopped()) ev.text += slot.stop_text->push(slot.decoder->flush());
    if (!slot.stop_text->stopped()) ev.text += slot.stop_text->flush();
    ev.done = true;
    ev.finish_reason = reason;
    ev.stop_sequence = slot.stop_text->matched();
    slot.job->push(std::move(ev));
    slot.job.reset();
    --processing_;
    slot.decoding = false;
    slot.last_used = ++step_;
}

}  // namespace anelm::server

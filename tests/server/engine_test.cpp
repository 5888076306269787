// The scheduler gives every request the tokens it would get alone, whatever
// runs beside it; reuses a slot's cached prefix without changing the result;
// ends requests at their stop strings, their length or when cancelled.
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "runtime/generate.h"
#include "runtime/model.h"
#include "server/api_error.h"
#include "server/engine.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm::server {
namespace {

constexpr int64_t n_ctx = 96;

const Model& tiny() {
    static const Model model = [] {
        const auto dir = test::temp_dir("server-engine") / "tiny-qwen3";
        SynthOptions options;
        options.dtype = DType::f32;
        options.seed = 3;
        synth_write(synth_preset("tiny-qwen3"), dir.string(), options);
        return open_model(dir.string(), "", true);
    }();
    return model;
}

SessionOptions session_options(int64_t batch_rows, KvType kv = KvType::f16) {
    SessionOptions so;
    so.kv = kv;
    so.n_ctx = n_ctx;
    so.threads = 2;
    so.prefill_batch = 16;
    so.batch_rows = batch_rows;
    return so;
}

struct Result {
    std::vector<int32_t> ids;
    std::string text, finish_reason, error;
    JobUsage usage;
    size_t events = 0;
};

Result finish(Job& job) {
    Result r;
    std::vector<Event> events;
    while (r.finish_reason.empty() && r.error.empty()) {
        if (!job.wait(events, std::chrono::seconds(30))) {
            r.error = "timed out";
            break;
        }
        for (const Event& ev : events) {
            ++r.events;
            r.text += ev.text;
            for (const TokenLogprob& lp : ev.logprobs) r.ids.push_back(lp.id);
            if (ev.done) r.finish_reason = ev.finish_reason, r.error = ev.error;
        }
        events.clear();
    }
    r.usage = job.usage();
    return r;
}

JobSpec greedy(std::vector<int32_t> prompt, int64_t max_tokens) {
    JobSpec spec;
    spec.prompt = std::move(prompt);
    spec.max_tokens = max_tokens;
    spec.sampler.temp = 0;
    spec.sampler.presence_penalty = 2;  // the random model would repeat one token
    spec.logprobs = true;               // the ids come with the log-probabilities
    return spec;
}

// Greedy generation alone, by the plain loop.
std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int64_t max_tokens,
                           float presence_penalty = 2, KvType kv = KvType::f16) {
    Session session(tiny().spec(), tiny().weights(), session_options(0, kv));
    GenerateOptions options;
    options.max_new_tokens = max_tokens;
    options.sampler.temp = 0;
    options.sampler.presence_penalty = presence_penalty;
    options.stop_ids = tiny().stop_ids();
    std::vector<int32_t> out;
    generate(session, prompt, options, [&](int32_t id) { out.push_back(id); });
    return out;
}

std::vector<int32_t> prompt_of(const std::string& text) {
    return tiny().tokenizer->encode(text, true);
}

// A request whose draws are seeded (a JobSpec is moved into the engine, so
// each call makes another).
JobSpec seeded(const std::string& text, int64_t max_tokens, float temp, uint64_t seed) {
    JobSpec spec = greedy(prompt_of(text), max_tokens);
    spec.sampler.temp = temp;
    spec.sampler.seed = seed;
    return spec;
}

SessionOptions verifying(int slots, const Speculation& speculation, KvType kv) {
    SessionOptions so = session_options(slots, kv);
    if (speculation.lookup > 0) so.verify_tokens = slots * (speculation.draft_n + 1);
    return so;
}

struct Server {
    explicit Server(int slots, Speculation speculation = {}, KvType kv = KvType::f16)
        : session(tiny().spec(), tiny().weights(), verifying(slots, speculation, kv)),
          slots(session, slots),
          engine(slots_model(), *tiny().tokenizer, tiny().stop_ids(), 8, speculation) {}
    SlotModel& slots_model() { return slots; }
    Session session;
    SessionSlots slots;
    Engine engine;
};

TEST(Engine, BatchedRequestsGetTheTokensTheyGetAlone) {
    Server server(3);
    const std::vector<std::string> texts = {"Once upon a time", "The little dog ran to the park",
                                            "Hi"};
    std::vector<std::shared_ptr<Job>> jobs;
    for (size_t i = 0; i < texts.size(); ++i)
        jobs.push_back(server.engine.submit(greedy(prompt_of(texts[i]), 20 + 5 * int64_t(i))));
    for (size_t i = 0; i < texts.size(); ++i) {
        SCOPED_TRACE(texts[i]);
        const Result r = finish(*jobs[i]);
        ASSERT_EQ(r.error, "");
        EXPECT_EQ(r.ids, alone(prompt_of(texts[i]), 20 + 5 * int64_t(i)));
        EXPECT_EQ(r.usage.completion_tokens, static_cast<int64_t>(r.ids.size()));
        EXPECT_EQ(r.usage.prompt_tokens, static_cast<int64_t>(prompt_of(texts[i]).size()));
        if (r.finish_reason == "length") {
            EXPECT_EQ(r.usage.completion_tokens, 20 + 5 * int64_t(i));
        } else {
            EXPECT_EQ(r.finish_reason, "stop");
        }
        EXPECT_GT(std::set<int32_t>(r.ids.begin(), r.ids.end()).size(), 3u);
    }
}

// With prompt lookup, requests drafting side by side (and one whose draws
// are seeded) get the tokens they get alone without drafts. Without a
// penalty the random model soon repeats itself, which lookup drafts from.
TEST(Engine, SpeculativeRequestsGetTheTokensTheyGetAlone) {
    Server server(3, Speculation{2, 3});
    const std::vector<std::string> texts = {"one two three one two three one two three one two",
                                            "a b c d a b c d a b c d a b", "Hi"};
    auto seeded_copy = [] { return seeded("x y x y x y x y x y", 24, 0.8f, 5); };
    auto repeating = [&](const std::string& t) {
        JobSpec spec = greedy(prompt_of(t), 30);
        spec.sampler.presence_penalty = 0;
        return spec;
    };
    std::vector<std::shared_ptr<Job>> jobs;
    for (const std::string& t : texts) jobs.push_back(server.engine.submit(repeating(t)));
    auto drawn = server.engine.submit(seeded_copy());
    for (size_t i = 0; i < texts.size(); ++i) {
        SCOPED_TRACE(texts[i]);
        const Result r = finish(*jobs[i]);
        ASSERT_EQ(r.error, "");
        EXPECT_EQ(r.ids, alone(prompt_of(texts[i]), 30, 0));
        EXPECT_EQ(r.usage.completion_tokens, static_cast<int64_t>(r.ids.size()));
    }
    Server plain(1);
    EXPECT_EQ(finish(*drawn).ids, finish(*plain.engine.submit(seeded_copy())).ids);
    // A next turn reuses what the drafting left in the cache: exactly the fed tokens.
    const Result first = finish(*server.engine.submit(repeating(texts[1])));
    std::vector<int32_t> next = prompt_of(texts[1]);
    next.insert(next.end(), first.ids.begin(), first.ids.end());
    const std::vector<int32_t> more = prompt_of("e f g");
    next.insert(next.end(), more.begin() + 1, more.end());
    JobSpec turn = greedy(next, 20);
    turn.sampler.presence_penalty = 0;
    const Result second = finish(*server.engine.submit(std::move(turn)));
    ASSERT_EQ(second.error, "");
    EXPECT_EQ(second.usage.cached_tokens,
              static_cast<int64_t>(prompt_of(texts[1]).size() + first.ids.size() - 1));
    EXPECT_EQ(second.ids, alone(next, 20, 0));
    const SpeculationStats stats = server.engine.speculation_stats();
    EXPECT_GT(stats.verify_passes, 0);
    EXPECT_GT(stats.drafted, 0);
    EXPECT_LE(stats.accepted, stats.drafted);
}

// With int8 rows in the cache, drafting side by side and reusing a cached
// prefix give the tokens of the plain loop on the same KV type.
TEST(Engine, Int8KvCachesKeepTheTokensTheyGetAlone) {
    for (KvType kv : {KvType::q8, KvType::k16v8}) {
        SCOPED_TRACE(kv_type_name(kv));
        Server server(2, Speculation{2, 3}, kv);
        const std::vector<std::string> texts = {"a b c d a b c d a b c d a b", "Hi there"};
        auto repeating = [&](const std::vector<int32_t>& prompt, int64_t n) {
            JobSpec spec = greedy(prompt, n);
            spec.sampler.presence_penalty = 0;
            return spec;
        };
        std::vector<std::shared_ptr<Job>> jobs;
        for (const std::string& t : texts)
            jobs.push_back(server.engine.submit(repeating(prompt_of(t), 24)));
        std::vector<Result> results;
        for (size_t i = 0; i < texts.size(); ++i) {
            results.push_back(finish(*jobs[i]));
            ASSERT_EQ(results[i].error, "");
            EXPECT_EQ(results[i].ids, alone(prompt_of(texts[i]), 24, 0, kv));
        }
        std::vector<int32_t> next = prompt_of(texts[0]);
        next.insert(next.end(), results[0].ids.begin(), results[0].ids.end());
        const std::vector<int32_t> more = prompt_of("e f g");
        next.insert(next.end(), more.begin() + 1, more.end());
        const Result second = finish(*server.engine.submit(repeating(next, 16)));
        ASSERT_EQ(second.error, "");
        EXPECT_GT(second.usage.cached_tokens, 0);
        EXPECT_EQ(second.ids, alone(next, 16, 0, kv));
    }
}

// /metrics' counters: every prompt token fed and every token generated; the
// tokens of decode-only steps are all but the first of each request and those
// made beside a prompt chunk (at most one per chunk with two slots).
TEST(Engine, CountsPromptAndDecodeSteps) {
    Server server(2);
    const std::vector<std::vector<int32_t>> prompts = {
        prompt_of("The little dog ran to the park and back again"), prompt_of("Hi")};
    std::vector<std::shared_ptr<Job>> jobs;
    for (const auto& p : prompts) jobs.push_back(server.engine.submit(greedy(p, 12)));
    int64_t fed = 0, generated = 0, chunks = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const Result r = finish(*jobs[i]);
        ASSERT_EQ(r.error, "");
        const auto n = static_cast<int64_t>(prompts[i].size()) - r.usage.cached_tokens;
        fed += n;
        chunks += (n + 7) / 8;  // the Server's prefill chunk
        generated += r.usage.completion_tokens;
    }
    const EngineStats stats = server.engine.stats();
    EXPECT_EQ(stats.prompt_tokens, fed);
    EXPECT_EQ(stats.tokens_predicted, generated);
    EXPECT_LE(stats.decode_tokens, generated - 2);
    EXPECT_GE(stats.decode_tokens, generated - 2 - chunks);
    EXPECT_GT(stats.prompt_seconds, 0.0);
    EXPECT_GT(stats.decode_seconds, 0.0);
}

TEST(Engine, AFollowingRequestReusesTheCachedPrefix) {
    Server server(2);
    const std::vector<int32_t> first = prompt_of("One two three four five six seven");
    const Result a = finish(*server.engine.submit(greedy(first, 6)));
    ASSERT_EQ(a.error, "");
    EXPECT_EQ(a.usage.cached_tokens, 0);
    // The next turn: the first prompt and its answer, then more.
    std::vector<int32_t> second = first;
    second.insert(second.end(), a.ids.begin(), a.ids.end());
    const std::vector<int32_t> more = prompt_of("eight nine");
    second.insert(second.end(), more.begin() + 1, more.end());
    const Result b = finish(*server.engine.submit(greedy(second, 10)));
    ASSERT_EQ(b.error, "");
    // The cache holds the first prompt and every answer token but the last.
    EXPECT_EQ(b.usage.cached_tokens, static_cast<int64_t>(first.size() + a.ids.size() - 1));
    EXPECT_EQ(b.ids, alone(second, 10));
    // A prompt that diverges early keeps only the shared start.
    std::vector<int32_t> other = first;
    other[3] = other[3] == 5 ? 6 : 5;
    const Result c = finish(*server.engine.submit(greedy(other, 4)));
    EXPECT_LE(c.usage.cached_tokens, 3);
    EXPECT_EQ(c.ids, alone(other, 4));
}

TEST(Engine, ASeededDrawDoesNotDependOnItsNeighbours) {
    auto copy = [] { return seeded("Once upon a time", 16, 1.0f, 11); };
    Server one(1);
    const Result single = finish(*one.engine.submit(copy()));
    Server three(3);
    auto noise = three.engine.submit(greedy(prompt_of("Some other text"), 30));
    auto job = three.engine.submit(copy());
    auto noise2 = three.engine.submit(greedy(prompt_of("Yet another"), 30));
    EXPECT_EQ(finish(*job).ids, single.ids);
    finish(*noise);
    finish(*noise2);
    EXPECT_GT(single.ids.size(), 0u);
}

TEST(Engine, StopStringsEndTheTextWhereTheyBegin) {
    Server server(1);
    const std::vector<int32_t> prompt = prompt_of("The little dog");
    const Result plain = finish(*server.engine.submit(greedy(prompt, 24)));
    ASSERT_GE(plain.text.size(), 8u);
    // A stop string that spans the boundary between two tokens' text.
    const std::string stop = plain.text.substr(plain.text.size() / 2 - 1, 3);
    JobSpec spec = greedy(prompt, 24);
    spec.stop = {stop};
    const Result stopped = finish(*server.engine.submit(std::move(spec)));
    EXPECT_EQ(stopped.finish_reason, "stop");
    EXPECT_EQ(stopped.text, plain.text.substr(0, plain.text.find(stop)));
    EXPECT_LT(stopped.usage.completion_tokens, plain.usage.completion_tokens);
}

// Runs a decode step only when the test allows one, so a request can be
// caught in the middle.
class GatedSlots : public SlotModel {
public:
    explicit GatedSlots(SlotModel& inner) : inner_(inner) {}
    void allow(int steps) {
        std::lock_guard lock(mutex_);
        permits_ += steps;
        changed_.notify_all();
    }
    int slots() const override { return inner_.slots(); }
    int64_t n_ctx() const override { return inner_.n_ctx(); }
    int64_t pos(int slot) const override { return inner_.pos(slot); }
    int64_t keepable(int slot, int64_t shared) const override {
        return inner_.keepable(slot, shared);
    }
    void rewind(int slot, int64_t pos) override { inner_.rewind(slot, pos); }
    int max_segments() const override { return inner_.max_segments(); }
    int64_t max_tokens() const override { return inner_.max_tokens(); }
    // Steps that feed prompts pass; a step with only decode tokens waits.
    std::span<const float> step(std::span<const int> slots, std::span<const int32_t> tokens,
                                std::span<const int64_t> counts) override {
        if (std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c == 1; })) {
            std::unique_lock lock(mutex_);
            changed_.wait(lock, [&] { return permits_ > 0; });
            --permits_;
        }
        return inner_.step(slots, tokens, counts);
    }

private:
    SlotModel& inner_;
    std::mutex mutex_;
    std::condition_variable changed_;
    int permits_ = 0;
};

TEST(Engine, ACancelledRequestFreesItsSlot) {
    Session session(tiny().spec(), tiny().weights(), session_options(1));
    SessionSlots slots(session, 1);
    GatedSlots gated(slots);
    Engine engine(gated, *tiny().tokenizer, tiny().stop_ids(), 8);
    auto busy = engine.submit(greedy(prompt_of("Once upon a time"), -1));
    auto next = engine.submit(greedy(prompt_of("Hi"), 5));
    gated.allow(2);
    std::vector<Event> events;
    while (events.size() < 3) ASSERT_TRUE(busy->wait(events, std::chrono::seconds(30)));
    busy->cancel();
    gated.allow(1000);
    const Result r = finish(*next);
    EXPECT_EQ(r.error, "");
    EXPECT_EQ(r.ids, alone(prompt_of("Hi"), 5));
    // The step under way when it was cancelled may still finish.
    EXPECT_LE(busy->usage().completion_tokens, 4);
    // The cancelled request was told it is over.
    EXPECT_EQ(finish(*busy).finish_reason, "stop");
    // A request cancelled while it waits never runs.
    gated.allow(-1000);
    auto first = engine.submit(greedy(prompt_of("Once upon a time"), -1));
    auto waiting = engine.submit(greedy(prompt_of("Hi"), 5));
    waiting->cancel();
    first->cancel();
    gated.allow(1000);
    EXPECT_EQ(finish(*waiting).finish_reason, "stop");
    EXPECT_EQ(waiting->usage().completion_tokens, 0);
    finish(*first);
}

TEST(Engine, UntilTheContextIsFullAndNoFurther) {
    Server server(1);
    const std::vector<int32_t> prompt = prompt_of("Once upon a time");
    const Result r = finish(*server.engine.submit(greedy(prompt, -1)));
    if (r.finish_reason == "length") {
        EXPECT_EQ(r.usage.completion_tokens, n_ctx - static_cast<int64_t>(prompt.size()));
    }
    std::vector<int32_t> too_long(n_ctx, prompt[1]);
    try {
        server.engine.submit(greedy(too_long, 1));
        ADD_FAILURE() << "a prompt as long as the context was accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.code, "context_length_exceeded");
    }
}

}  // namespace
}  // namespace anelm::server

namespace anelm::server {
namespace {

// Embeddings from several threads while requests generate: each thread gets
// the vectors its inputs get alone, and the requests their own tokens.
TEST(Engine, EmbeddingsBesideGenerationEqualTheirOwn) {
    SessionOptions so = session_options(2);
    so.hidden = true;
    Session session(tiny().spec(), tiny().weights(), so);
    SessionSlots slots(session, 2, Pooling::last);
    Engine engine(slots, *tiny().tokenizer, tiny().stop_ids(), 8);
    EXPECT_EQ(engine.embedding_dims(), tiny().spec().n_embd);
    const std::vector<std::string> prompts = {"Once upon a time", "The little dog"};
    std::vector<std::shared_ptr<Job>> jobs;
    for (const std::string& p : prompts) jobs.push_back(engine.submit(greedy(prompt_of(p), 12)));
    const std::vector<std::vector<std::vector<int32_t>>> inputs = {
        {prompt_of("a cat"), prompt_of("sat on the mat today")},
        {prompt_of("the little dog ran to the park and back")},
        {prompt_of("hi"), prompt_of("a cat"), prompt_of("ok")}};
    std::vector<std::vector<std::vector<float>>> vectors(inputs.size());
    std::vector<std::thread> threads;
    for (size_t t = 0; t < inputs.size(); ++t)
        threads.emplace_back([&, t] { vectors[t] = engine.embed(inputs[t]); });
    for (std::thread& t : threads) t.join();

    SessionOptions single = session_options(0);
    single.hidden = true;
    Session own(tiny().spec(), tiny().weights(), single);
    Embedder embedder(own, Pooling::last);
    for (size_t t = 0; t < inputs.size(); ++t) {
        ASSERT_EQ(vectors[t].size(), inputs[t].size());
        const auto expected = embedder.embed(inputs[t]);
        for (size_t i = 0; i < expected.size(); ++i)
            for (size_t k = 0; k < expected[i].size(); ++k)
                EXPECT_NEAR(vectors[t][i][k], expected[i][k], 1e-5) << t << " " << i << " " << k;
    }
    for (size_t i = 0; i < prompts.size(); ++i)
        EXPECT_EQ(finish(*jobs[i]).ids, alone(prompt_of(prompts[i]), 12));

    try {
        engine.embed({std::vector<int32_t>(n_ctx + 1, 5)});
        ADD_FAILURE() << "an input past the context was embedded";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.code, "context_length_exceeded");
    }
}

TEST(Engine, AModelWithoutTheEmbedFunctionRefusesEmbeddings) {
    Server server(1);
    EXPECT_EQ(server.engine.embedding_dims(), 0);
    EXPECT_THROW(server.engine.embed({prompt_of("a cat")}), ApiError);
}

}  // namespace
}  // namespace anelm::server

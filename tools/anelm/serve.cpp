// anelm serve: an OpenAI-compatible HTTP server on a Hugging Face folder (CPU
// sessions, decoded together) or a converted folder (the MIL interpreter).
#include <fmt/core.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "command.h"
#include "converted/ane_pipeline.h"
#include "flag_checks.h"
#include "io/generation_config.h"
#include "io/gguf.h"
#include "io/pooling_config.h"
#include "run_options.h"
#include "sampler_options.h"
#include "served_facts.h"
#include "server/api_server.h"
#include "server/json_constraint.h"

namespace anelm::cli {
namespace {

struct ServeArgs {
    std::string model, tokenizer, alias, api_key_file, template_file, pooling;
    server::ServerOptions server;
    int parallel = 4;
    server::Speculation speculation;
    RunOptions run;
    SamplerOptions sampler{SamplerParams{}};
};

std::string read_key_file(const std::string& path) {
    std::ifstream in(path);
    std::string key;
    if (!in || !std::getline(in, key)) fail("{}: cannot read an API key from it", path);
    while (!key.empty() && (key.back() == '\r' || key.back() == ' ')) key.pop_back();
    if (key.empty()) fail("{}: the first line (the API key) is empty", path);
    return key;
}

std::unique_ptr<ChatTemplate> load_template(const std::string& path, const std::string& file) {
    if (!file.empty()) return std::make_unique<ChatTemplate>(ChatTemplate::load(path, file));
    if (!std::filesystem::is_directory(path) && !is_gguf_file(path)) {
        fmt::print(stderr,
                   "anelm serve: a checkpoint file has no chat template; "
                   "/v1/chat/completions is off\n");
        return nullptr;
    }
    try {
        return std::make_unique<ChatTemplate>(ChatTemplate::load(path));
    } catch (const Error& e) {
        fmt::print(stderr, "anelm serve: no chat template ({}); /v1/chat/completions is off\n",
                   e.what());
        return nullptr;
    }
}

// What a loaded model keeps alive while it is served.
struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<Session> session;
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<ConvertedModel> converted;
    std::unique_ptr<server::SlotModel> slots;
    std::unique_ptr<ChatTemplate> chat_template;
    std::unique_ptr<server::Engine> engine;
    std::unique_ptr<server::JsonConstraints> json;
};

std::shared_ptr<const server::ServedModel> load(const ServeArgs& args, Loaded& l) {
    const Tokenizer* tokenizer = nullptr;
    std::vector<int32_t> stop_ids;
    std::string how;
    if (is_converted_dir(args.model)) {
        if (args.parallel > 1)
            fmt::print(stderr, "anelm serve: a converted folder runs one request at a time\n");
        const auto rounding = converted_rounding(args.run.precision_name);
        l.pool = std::make_unique<ThreadPool>(args.run.threads > 0 ? args.run.threads
                                                                   : ThreadPool::physical_cores());
        l.converted =
            std::make_unique<ConvertedModel>(args.model, args.tokenizer, rounding, l.pool.get(),
                                             converted_quant_dot(args.run.quant_dot));
        l.slots = std::make_unique<server::SingleSlot>(l.converted->pipeline());
        tokenizer = &l.converted->tokenizer();
        stop_ids = l.converted->stop_ids();
        how = "Core ML packages on the MIL interpreter";
    } else {
        l.model = std::make_unique<Model>(open_model(args.model, args.tokenizer, true));
        SessionOptions so = args.run.session(*l.model);
        so.batch_rows = args.parallel;
        so.hidden = true;
        if (args.speculation.lookup > 0)
            so.verify_tokens = args.parallel * (args.speculation.draft_n + 1);
        l.session = open_session(*l.model, so);
        const PoolingChoice pooling = choose_pooling(args.model, args.pooling);
        l.slots =
            std::make_unique<server::SessionSlots>(*l.session, args.parallel, pooling.pooling);
        fmt::print(stderr, "anelm serve: embeddings pooled by {} ({})\n",
                   pooling_name(pooling.pooling), pooling.source);
        tokenizer = l.model->tokenizer.get();
        stop_ids = l.model->stop_ids();
        how = fmt::format("{} threads, {}, {}", l.session->threads(), args.run.precision_name,
                          kernels_isa());
    }
    l.chat_template = load_template(args.model, args.template_file);
    l.engine =
        std::make_unique<server::Engine>(*l.slots, *tokenizer, stop_ids, 512, args.speculation);
    l.json = std::make_unique<server::JsonConstraints>(*tokenizer, stop_ids);

    auto served = std::make_shared<server::ServedModel>();
    served->name = args.alias.empty()
                       ? std::filesystem::path(args.model).lexically_normal().filename().string()
                       : args.alias;
    if (served->name.empty()) served->name = args.model;
    served->tokenizer = tokenizer;
    served->chat_template = l.chat_template.get();
    served->engine = l.engine.get();
    const ResolvedSampling sampling = args.sampler.resolve(model_generation_sampling(args.model));
    served->defaults = sampling.params;
    served->fixed_seed = sampling.seed_given;
    served->constraint = [json = l.json.get()](const server::CompletionRequest& r) {
        return json->make(r);
    };
    served->facts = served_facts(args.model, l.model.get(), l.converted.get());
    fmt::print(stderr, "anelm serve: {} ready: {} {} of {} tokens ({})\n", served->name,
               l.slots->slots(), l.slots->slots() == 1 ? "slot" : "slots", l.slots->n_ctx(), how);
    fmt::print(
        stderr, "requests that set none: {}, {}\n", sampling.settings,
        sampling.seed_given ? fmt::format("seed {}", sampling.params.seed) : "a random seed each");
    return served;
}

int run_serve(ServeArgs args) {
    if (!args.api_key_file.empty()) args.server.api_key = read_key_file(args.api_key_file);
    if (args.parallel < 1 || args.parallel > 256)
        fail("--parallel: {}, expected 1 to 256", args.parallel);
    // SIGINT and SIGTERM are taken by this thread alone (sigwait), so every
    // other thread runs on undisturbed until the server stops.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    Loaded loaded;  // outlives the server, whose threads answer with it
    server::ApiServer api(args.server);
    const int port = api.bind();
    fmt::print(stderr, "anelm serve: listening on http://{}:{} (loading {})\n", args.server.host,
               port, args.model);
    api.start();
    // A load that throws stops the server (~ApiServer) on its way to main's one-line error.
    api.serve(load(args, loaded));
    int signal = 0;
    sigwait(&signals, &signal);
    fmt::print(stderr, "anelm serve: stopping\n");
    api.stop();
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<ServeArgs>();
    app.add_option("model", args->model,
                   "Hugging Face folder, GGUF file, llama2.c .bin, or a folder anelm convert wrote")
        ->required();
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin");
    app.add_option("--host", args->server.host, "address to listen on")->capture_default_str();
    in_range(app.add_option("--port", args->server.port, "port (0: any free one)"), {0, 65535})
        ->capture_default_str();
    auto* key = app.add_option("--api-key", args->server.api_key,
                               "require Authorization: Bearer KEY on every route but /health");
    app.add_option("--api-key-file", args->api_key_file, "read the API key from this file")
        ->excludes(key);
    in_range(app.add_option("--lookup", args->speculation.lookup,
                            "speculative decoding with prompt lookup (n-grams of up to N tokens) "
                            "for requests without a response_format; the same text, greedy or "
                            "seeded"),
             {1, 64});
    in_range(app.add_option("--draft-n", args->speculation.draft_n,
                            "tokens drafted per request and step (a verify pass holds parallel x "
                            "(N + 1))"),
             {1, 64})
        ->capture_default_str();
    in_range(app.add_option("--parallel", args->parallel,
                            "requests generated at once (their decode steps run as one batch)"),
             {1, 256})
        ->capture_default_str();
    in_range(app.add_option("--max-body", args->server.max_body, "largest request body in bytes"),
             {1024, 1 << 30})
        ->capture_default_str();
    in_range(app.add_option("--timeout", args->server.timeout_seconds,
                            "seconds a stalled socket read or write may take"),
             {1, 86400})
        ->capture_default_str();
    app.add_option("--pooling", args->pooling,
                   "embeddings' pooling: mean, last or cls (default: the model's "
                   "sentence-transformers modules.json, else mean)")
        ->check(CLI::IsMember({"mean", "last", "cls"}));
    app.add_option("--alias", args->alias, "the model's name in the API (default: folder name)");
    app.add_option("--template", args->template_file,
                   "a Jinja chat template file for /v1/chat/completions instead of the model's");
    args->sampler.add_to(app);
    add_run_options(app, args->run);
    return [args] { return run_serve(*args); };
}

const bool registered =
    register_command({"serve", "Serve a model over an OpenAI-compatible HTTP API", setup});

}  // namespace
}  // namespace anelm::cli

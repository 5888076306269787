#include "fuzz_targets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "anemll/meta_yaml.h"
#include "anemll/per_layer_table.h"
#include "base/error.h"
#include "chat/chat_template.h"
#include "coreml/package.h"
#include "exec/mil/function.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "io/gguf.h"
#include "io/safetensors.h"
#include "models/gguf_model.h"
#include "models/hf_config.h"
#include "models/model_loader.h"
#include "server/anthropic_messages.h"
#include "server/anthropic_stream.h"
#include "server/api_error.h"
#include "server/completion_request.h"
#include "server/ollama_api.h"
#include "server/ollama_stream.h"
#include "server/embeddings_api.h"
#include "server/openai_json.h"
#include "server/reply_parser.h"
#include "server/responses_api.h"
#include "server/responses_stream.h"
#include "server/stop_text.h"
#include "tokenizer/tokenizer.h"

namespace anelm::fuzz {

namespace {

std::string_view text(std::span<const uint8_t> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The readers that take a path get the bytes as a file of this process's own
// (its name ends as the reader expects: llama2c by .bin, meta by meta.yaml).
// The folder goes when the process exits.
std::string as_file(std::span<const uint8_t> bytes, const std::string& name) {
    struct ProcessFolder {
        std::filesystem::path dir =
            std::filesystem::temp_directory_path() / ("anelm-fuzz-" + std::to_string(::getpid()));
        ProcessFolder() { std::filesystem::create_directories(dir); }
        ~ProcessFolder() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    };
    static const ProcessFolder folder;
    const std::string path = (folder.dir / name).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    return path;
}

void hf_config(std::span<const uint8_t> bytes) {
    parse_hf_config(text(bytes), "fuzz/config.json");
}

void safetensors(std::span<const uint8_t> bytes) {
    WeightStore store;
    load_safetensors(as_file(bytes, "model.safetensors"), store);
}

void gguf(std::span<const uint8_t> bytes) {
    const GgufFile file(as_file(bytes, "model.gguf"));
    gguf_model_spec(file);
}

void llama2c(std::span<const uint8_t> bytes) {
    load_model(as_file(bytes, "model.bin"));
}

void meta_yaml(std::span<const uint8_t> bytes) {
    anemll::read_meta_yaml(as_file(bytes, "meta.yaml"));
}

void per_layer_table(std::span<const uint8_t> bytes) {
    const anemll::PerLayerTable table(as_file(bytes, "table.bin"));
    const int32_t last = static_cast<int32_t>(table.rows() - 1);
    std::vector<float> row(static_cast<size_t>(table.cols()));
    table.lookup(std::span(&last, 1), row);
}

void tokenizer_json(std::span<const uint8_t> bytes) {
    const auto tokenizer = load_tokenizer(as_file(bytes, "tokenizer.json"));
    tokenizer->encode("Hello, world! 12345 <|im_start|> ünïcödé", true);
}

void jinja(std::span<const uint8_t> bytes) {
    const ChatTemplate t(std::string(text(bytes)), "fuzz");
    const auto messages = nlohmann::ordered_json::parse(
        R"([{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "a"}])");
    t.render(messages, true);
}

// A Core ML package of tests/fuzz/package's three files (a tiny LM head: its
// Manifest.json, model.mlmodel and weight blob file) with one of them the
// input; read, then every function prepared to run (ops, types, weights).
void package_with(std::span<const uint8_t> bytes, const std::string& replaced) {
    namespace fs = std::filesystem;
    const fs::path fixture = fs::path(ANELM_SOURCE_DIR) / "tests/fuzz/package";
    const fs::path dir = fs::path(as_file({}, "placeholder")).parent_path() / "fuzz.mlpackage";
    const fs::path data = dir / "Data/com.apple.CoreML";
    fs::create_directories(data / "weights");
    const std::pair<const char*, fs::path> files[] = {{"Manifest.json", dir / "Manifest.json"},
                                                      {"model.mlmodel", data / "model.mlmodel"},
                                                      {"weight.bin", data / "weights/weight.bin"}};
    for (const auto& [name, path] : files) {
        if (name == replaced)
            std::ofstream(path, std::ios::binary | std::ios::trunc)
                .write(reinterpret_cast<const char*>(bytes.data()),
                       static_cast<std::streamsize>(bytes.size()));
        else
            fs::copy_file(fixture / name, path, fs::copy_options::overwrite_existing);
    }
    const coreml::Package package(dir);
    for (const auto& [name, fn] : package.model().mlprogram().functions())
        const milexec::Function prepared(package.model().mlprogram(), name, package);
}

void mlmodel(std::span<const uint8_t> bytes) {
    package_with(bytes, "model.mlmodel");
}

void manifest(std::span<const uint8_t> bytes) {
    package_with(bytes, "Manifest.json");
}

void weight_blob(std::span<const uint8_t> bytes) {
    package_with(bytes, "weight.bin");
}

// A client's response_format schema (the server compiles it for every
// request), then a matcher run over a JSON text. Bytes that are not JSON at
// all never reach the compiler: the server refuses the body first.
void json_schema(std::span<const uint8_t> bytes) {
    const auto schema = nlohmann::ordered_json::parse(text(bytes), nullptr, false);
    if (schema.is_discarded()) return;
    const grammar::Grammar g = grammar::Grammar::from_json_schema(schema, "fuzz.schema");
    grammar::Matcher m(g);
    for (std::string_view piece : {"{\"a\": [1, -2.5e3, \"x\\u00e9\", true, null]", ", \"b\": {}}"})
        if (!m.advance(piece)) break;
    m.accepts_end();
}

// A stream's text through the stop strings a piece at a time, as the engine
// hands it over: what is shown is the text up to the first stop, never a stop.
void check_stop_text(const std::vector<std::string>& stops, const std::string& text) {
    server::StopText filter(stops);
    std::string shown;
    for (size_t at = 0, piece = 1; at < text.size(); at += piece, piece = piece % 5 + 1)
        shown += filter.push(std::string_view(text).substr(at, piece));
    shown += filter.flush();
    size_t first = std::string::npos;
    for (const std::string& s : stops) first = std::min(first, text.find(s));
    if (shown != text.substr(0, first)) throw std::logic_error("stop strings: wrong text shown");
}

// One SSE event: a single `data:` line whose JSON parses back, whatever the
// bytes of the text (part of a UTF-8 character included).
void check_sse_event(const server::ResponseHead& head, const std::string& piece) {
    const std::string event =
        server::sse_event(server::chunk_json(head, &piece, true, "", nullptr));
    const std::string_view frame = "data: ";
    if (event.rfind(frame, 0) != 0 || !event.ends_with("\n\n") ||
        event.find('\n') != event.size() - 2)
        throw std::logic_error("SSE event is not one data line");
    const auto parsed = nlohmann::json::parse(event.substr(frame.size()), nullptr, false);
    if (parsed.is_discarded()) throw std::logic_error("SSE event data is not JSON");
}

// A reply read for calls and reasoning in every family's format, whole and as
// a stream in pieces of 1 to 5 bytes: the pieces join to the whole, and every
// delta serializes.
void check_reply(const server::ToolRequest& tools, const std::string& text) {
    const server::ToolFormat* formats[] = {
        &server::hermes_tool_format(), &server::qwen_xml_tool_format(),
        &server::llama3_tool_format(), &server::json_convention_format(),
        &server::gemma4_tool_format(), &server::lfm2_tool_format(),
        &server::forced_call_format()};
    for (const server::ToolFormat* format : formats) {
        server::ReplyParser whole({"<think>", "</think>"}, false, format, tools);
        whole.push(text);
        const server::ReplyParts parts = whole.parts(true);
        server::ReplyParser stream({"<think>", "</think>"}, false, format, tools);
        server::ReplyDeltas deltas;
        std::string content, reasoning;
        const std::vector<std::string> ids(parts.calls.size() + 64, "call_x");
        const auto add = [&](bool final) {
            const server::ReplyDelta d = deltas.next(stream.parts(final));
            if (d.calls.size() < ids.size()) server::json_text(server::chat_delta_json(d, ids));
            content += d.content;
            reasoning += d.reasoning;
        };
        for (size_t at = 0, piece = 1; at < text.size(); at += piece, piece = piece % 5 + 1) {
            stream.push(std::string_view(text).substr(at, piece));
            add(false);
        }
        add(true);
        if (content != parts.content || reasoning != parts.reasoning)
            throw std::logic_error("reply: streamed pieces differ from the whole");
    }
}

// Each event of a stream with event: lines (Anthropic's, the Responses API's):
// an event line naming its type and a data line of JSON of that type.
template <typename Check>
void check_typed_events(const std::string& events, const char* api, Check check) {
    for (size_t at = 0; at < events.size();) {
        const size_t data = events.find("\ndata: ", at), end = events.find("\n\n", at);
        if (events.compare(at, 7, "event: ") != 0 || data == std::string::npos || end < data)
            throw std::logic_error(fmt::format("{} event is not an event and a data line", api));
        const auto parsed =
            nlohmann::json::parse(events.substr(data + 7, end - data - 7), nullptr, false);
        if (parsed.is_discarded() || parsed["type"] != events.substr(at + 7, data - at - 7))
            throw std::logic_error(fmt::format("{} event data is not JSON of its type", api));
        check(parsed);
        at = end + 2;
    }
}

// A reply split as the server splits it, pushed in pieces of 1 to 5 bytes;
// add(delta, ids) writes each split's events.
template <typename Add>
void push_reply(const server::ToolRequest& tools, const std::string& text, Add add) {
    server::ReplyParser parser({"<think>", "</think>"}, false, &server::hermes_tool_format(),
                               tools);
    server::ReplyDeltas deltas;
    std::vector<std::string> ids;
    const auto split = [&](bool final) {
        const server::ReplyParts parts = parser.parts(final);
        ids.resize(parts.calls.size(), "call_x");
        add(deltas.next(parts), ids);
    };
    for (size_t at = 0, piece = 1; at < text.size(); at += piece, piece = piece % 5 + 1) {
        parser.push(std::string_view(text).substr(at, piece));
        split(false);
    }
    split(true);
}

// A reply streamed as Messages events: the blocks opened are all closed.
void check_message_events(const server::ToolRequest& tools, const std::string& text) {
    server::MessageStream stream("msg_x", "m");
    std::string events = stream.start({});
    push_reply(tools, text, [&](const server::ReplyDelta& d, const std::vector<std::string>& ids) {
        events += stream.add(d, ids);
    });
    events += stream.finish("end_turn", "", {});
    int open = 0;
    check_typed_events(events, "Messages", [&](const nlohmann::json& e) {
        open += e["type"] == "content_block_start" ? 1 : e["type"] == "content_block_stop" ? -1 : 0;
        if (open < 0 || open > 1)
            throw std::logic_error("Messages blocks not opened and closed in turn");
    });
    if (open != 0) throw std::logic_error("Messages block left open");
}

// A reply streamed as Responses events: sequence numbers count from 0, the
// items added are done in turn, and the last event's response holds them all.
void check_response_events(const server::ToolRequest& tools, const std::string& text) {
    server::ResponseStream stream(server::new_response_meta({}, "m"));
    std::string events = stream.start();
    push_reply(tools, text, [&](const server::ReplyDelta& d, const std::vector<std::string>& ids) {
        events += stream.add(d, ids);
    });
    events += stream.finish("stop", {});
    int sequence = 0, open = 0, done = 0;
    nlohmann::json last;
    check_typed_events(events, "Responses", [&](const nlohmann::json& e) {
        if (e["sequence_number"] != sequence++)
            throw std::logic_error("Responses events out of sequence");
        open += e["type"] == "response.output_item.added"  ? 1
                : e["type"] == "response.output_item.done" ? -1
                                                           : 0;
        if (open < 0 || open > 1)
            throw std::logic_error("Responses items not added and done in turn");
        done += e["type"] == "response.output_item.done";
        last = e;
    });
    if (open != 0 || last["type"] != "response.completed" ||
        last["response"]["output"].size() != static_cast<size_t>(done))
        throw std::logic_error("Responses stream does not end with its items completed");
}

// A reply streamed as Ollama's NDJSON lines in pieces of 1 to 5 bytes: every
// line is one JSON object, and only the last is done.
void check_ollama_lines(const server::ToolRequest& tools, const std::string& text) {
    server::ReplyParser parser({"<think>", "</think>"}, false, &server::hermes_tool_format(),
                               tools);
    server::ReplyDeltas deltas;
    const server::OllamaReply reply("m", true);
    std::string lines;
    for (size_t at = 0, piece = 1; at < text.size(); at += piece, piece = piece % 5 + 1) {
        parser.push(std::string_view(text).substr(at, piece));
        lines += reply.piece(deltas.next(parser.parts(false)));
    }
    const server::ReplyParts parts = parser.parts(true);
    lines += reply.piece(deltas.next(parts));
    lines += reply.finish(parts, std::vector<std::string>(parts.calls.size(), "call_x"), "stop",
                          nlohmann::json::object());
    for (size_t at = 0; at < lines.size();) {
        const size_t end = lines.find('\n', at);
        if (end == std::string::npos) throw std::logic_error("Ollama line without its newline");
        const auto parsed = nlohmann::json::parse(lines.substr(at, end - at), nullptr, false);
        if (!parsed.is_object() || parsed["done"] != (end + 1 == lines.size()))
            throw std::logic_error("Ollama line is not an object, or done before the last");
        at = end + 1;
    }
}

// A client's request body as the server reads it (JSON, then the fields of a
// chat, of a text completion, of Anthropic's Messages, of a Responses body and
// of Ollama's chat and generate); then the text it carries through the stop
// strings and, with the raw bytes too, through the stream's event writers.
void server_request(std::span<const uint8_t> bytes) {
    nlohmann::ordered_json body;
    try {
        body = server::parse_body(std::string(text(bytes)));
    } catch (const server::ApiError&) {
        return;
    }
    for (const bool chat : {true, false}) {
        server::CompletionRequest request;
        try {
            request = server::parse_completion_request(body, chat, SamplerParams{});
        } catch (const server::ApiError&) {
            continue;
        }
        const std::string carried = chat ? request.messages.dump() : request.prompt;
        check_stop_text(request.stop, carried);
        const server::ResponseHead head = server::new_response_head(chat, request.model);
        check_sse_event(head, carried);
        check_sse_event(head, std::string(text(bytes)));
        if (chat) check_reply(request.tools, std::string(text(bytes)));
    }
    try {
        server::parse_embedding_request(body, 1000, 64);
    } catch (const server::ApiError&) {
    }
    try {
        server::parse_ollama_embed_request(body);
    } catch (const server::ApiError&) {
    }
    try {
        const server::CompletionRequest request =
            server::parse_messages_request(body, SamplerParams{});
        std::string carried;  // the turns' texts joined, as a reply might write them
        for (const auto& m : request.messages) carried += m["content"].get<std::string>();
        check_message_events(request.tools, carried);
        check_message_events(request.tools, std::string(text(bytes)));
    } catch (const server::ApiError&) {
    }
    try {
        const server::CompletionRequest request =
            server::parse_responses_request(body, SamplerParams{});
        std::string carried;  // the turns' texts joined, as a reply might write them
        for (const auto& m : request.messages) carried += m["content"].get<std::string>();
        check_response_events(request.tools, carried);
        check_response_events(request.tools, std::string(text(bytes)));
    } catch (const server::ApiError&) {
    }
    for (const bool chat : {true, false}) {
        try {
            const server::OllamaRequest o = chat ? server::ollama_chat_request(body)
                                                 : server::ollama_generate_request(body, true);
            if (o.load_only) continue;
            const server::CompletionRequest request =
                server::parse_completion_request(o.body, o.chat, SamplerParams{});
            check_ollama_lines(request.tools, std::string(text(bytes)));
        } catch (const server::ApiError&) {
        }
    }
}

constexpr Target all[] = {
    {"hf_config", hf_config},
    {"safetensors", safetensors},
    {"gguf", gguf},
    {"llama2c", llama2c},
    {"meta_yaml", meta_yaml},
    {"per_layer_table", per_layer_table},
    {"tokenizer_json", tokenizer_json},
    {"jinja", jinja},
    {"mlmodel", mlmodel},
    {"manifest", manifest},
    {"weight_blob", weight_blob},
    {"json_schema", json_schema},
    {"server_request", server_request},
};

}  // namespace

std::span<const Target> targets() {
    return all;
}

const Target* find_target(std::string_view name) {
    for (const Target& t : all)
        if (name == t.name) return &t;
    return nullptr;
}

}  // namespace anelm::fuzz

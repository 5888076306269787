// ChatTemplate: loading a model folder the way transformers does, and the
// context it renders with.
#include "chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>

#include "base/error.h"
#include "test_support.h"

namespace anelm {
namespace {

using ojson = nlohmann::ordered_json;

void write(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

const ojson hello = ojson::parse(R"([{"role": "user", "content": "hi"}])");

TEST(ChatTemplate, ReadsTemplateAndSpecialTokensFromTokenizerConfig) {
    const auto dir = test::temp_dir("chat-config");
    write(dir / "tokenizer_config.json",
          R"({"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},)"
          R"( "eos_token": "</s>", "pad_token": null, "unk_token": "",)"
          R"( "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.content }}])"
          R"({% endfor %})"
          R"({{ eos_token }}|{{ pad_token is defined }}"})");
    const ChatTemplate chat = ChatTemplate::load(dir.string());
    EXPECT_EQ(chat.bos_token(), "<s>");
    EXPECT_EQ(chat.eos_token(), "</s>");
    // Unset special tokens are left out of the context, as transformers does.
    EXPECT_EQ(chat.render(hello, false), "<s>[hi]</s>|False");
    std::filesystem::remove_all(dir);
}

TEST(ChatTemplate, ChatTemplateJinjaTakesPrecedence) {
    const auto dir = test::temp_dir("chat-jinja");
    write(dir / "tokenizer_config.json", R"({"eos_token": "E", "chat_template": "from config"})");
    write(dir / "chat_template.jinja", "from file {{ eos_token }}\n");
    EXPECT_EQ(ChatTemplate::load(dir.string()).render(hello, false), "from file E");
    std::filesystem::remove_all(dir);
}

TEST(ChatTemplate, NamedTemplatesPickToolUseWhenToolsAreGiven) {
    const auto dir = test::temp_dir("chat-named");
    write(dir / "tokenizer_config.json", R"({"chat_template": [
        {"name": "default", "template": "plain"},
        {"name": "tool_use", "template": "tools={{ tools }}"}]})");
    const ChatTemplate chat = ChatTemplate::load(dir.string());
    EXPECT_EQ(chat.names(), (std::vector<std::string>{"default", "tool_use"}));
    EXPECT_EQ(chat.render(hello, false), "plain");
    EXPECT_EQ(chat.render(hello, false, {{"tools", ojson::array({1, 2})}}), "tools=[1, 2]");
    EXPECT_EQ(chat.render(hello, false, ojson::object(), "tool_use"), "tools=None");
    std::filesystem::remove_all(dir);
}

TEST(ChatTemplate, ContextMatchesApplyChatTemplate) {
    const ChatTemplate chat(
        "{{ tools }}|{{ documents }}|{{ add_generation_prompt }}|{{ messages | length }}|{{ extra "
        "}}",
        "t.jinja");
    EXPECT_EQ(chat.render(hello, true, {{"extra", "x"}}), "None|None|True|1|x");
    EXPECT_THROW(chat.render(hello, true, {{"messages", ojson::array()}}), Error);
    EXPECT_THROW(chat.render(ojson::object(), true), Error);
}

TEST(ChatTemplate, ErrorsNameTheFile) {
    const auto dir = test::temp_dir("chat-errors");
    write(dir / "chat_template.jinja", "ok\n{% if %}");
    try {
        ChatTemplate::load(dir.string());
        FAIL() << "expected a syntax error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()),
                  (dir / "chat_template.jinja").string() +
                      ":2: Expected an expression, got 'end of statement block'");
    }
    std::filesystem::remove_all(dir);
    EXPECT_THROW(ChatTemplate::load((dir / "missing").string()), Error);
    const auto empty = test::temp_dir("chat-empty");
    write(empty / "tokenizer_config.json", "{}");
    EXPECT_THROW(ChatTemplate::load(empty.string()), Error);
    std::filesystem::remove_all(empty);
}

TEST(ChatTemplate, RealTokenizerConfigs) {
    ANELM_REQUIRE_SHARED("tokenizers/qwen3/tokenizer_config.json");
    const ChatTemplate qwen = ChatTemplate::load(test::shared_path("tokenizers/qwen3").string());
    EXPECT_EQ(qwen.eos_token(), "<|im_end|>");
    EXPECT_EQ(qwen.bos_token(), "");
    EXPECT_EQ(qwen.render(hello, true, {{"enable_thinking", false}}),
              "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
    const ChatTemplate llama = ChatTemplate::load(test::shared_path("tokenizers/llama3").string());
    EXPECT_EQ(llama.render(hello, true),
              "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\n");
    const ChatTemplate gemma = ChatTemplate::load(test::shared_path("tokenizers/gemma3").string());
    EXPECT_EQ(gemma.render(hello, true),
              "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n");
}

}  // namespace
}  // namespace anelm

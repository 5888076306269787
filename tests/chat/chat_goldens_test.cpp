// The official chat templates against renders made with @huggingface/jinja
// (transformers' settings): every case of shared/tokenizers/chat-templates/goldens.jsonl.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "base/error.h"
#include "chat/chat_template.h"
#include "test_support.h"

namespace anelm {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

TEST(ChatGoldens, AllCasesRenderExactly) {
    ANELM_REQUIRE_SHARED("tokenizers/chat-templates/goldens.jsonl");
    const auto dir = test::shared_path("tokenizers/chat-templates");
    std::ifstream in(dir / "goldens.jsonl");
    std::map<std::string, int> passed, total;
    std::string line;
    int cases = 0;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        const ojson g = ojson::parse(line);
        const std::string file = g["template"];
        const std::string label = file + " / " + g["case"].get<std::string>();
        ++cases;
        ++total[file];
        // The goldens pass special tokens (None included) straight into the context.
        const ChatTemplate chat(read_text(dir / file), file, g["special_tokens"]);
        if (g.contains("expected_error")) {
            try {
                chat.render(g["messages"], g["add_generation_prompt"], g["extra_context"]);
                ADD_FAILURE() << label << ": rendered, but an error was expected";
            } catch (const Error& e) {
                const std::string what = e.what();
                EXPECT_NE(what.find(g["expected_error"].get<std::string>()), std::string::npos)
                    << label << ": " << what;
                EXPECT_EQ(what.rfind(file + ":", 0), 0u) << "error names the template: " << what;
                ++passed[file];
            }
            continue;
        }
        std::string got;
        try {
            got = chat.render(g["messages"], g["add_generation_prompt"], g["extra_context"]);
        } catch (const Error& e) {
            ADD_FAILURE() << label << ": " << e.what();
            continue;
        }
        EXPECT_EQ(got, g["expected"].get<std::string>()) << label;
        if (got == g["expected"].get<std::string>()) ++passed[file];
    }
    EXPECT_EQ(cases, 32);
    for (const auto& [file, n] : total)
        std::printf("  %-40s %d/%d\n", file.c_str(), passed[file], n);
}

}  // namespace
}  // namespace anelm

// The interpreter against Python's Jinja2 set up as transformers sets it up:
// every case in data/jinja2_reference.jsonl (see make_jinja2_reference.py)
// must render the same text, or fail with the same message at the same line.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include "base/error.h"
#include "chat/jinja_template.h"
#include "test_support.h"

namespace anelm::jinja {
namespace {

using ojson = nlohmann::ordered_json;

std::string read_text(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Templates calling strftime_now("%d %b %Y") printed the day the reference was
// recorded; the interpreter prints today's.
std::string dated_today(std::string text) {
    constexpr std::string_view recorded = "02 Dec 2026";
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char today[32];
    const size_t n = std::strftime(today, sizeof today, "%d %b %Y", &local);
    for (size_t at = text.find(recorded); at != std::string::npos;
         at = text.find(recorded, at + n)) {
        text.replace(at, recorded.size(), today, n);
    }
    return text;
}

TEST(Jinja2Reference, RendersAsJinja2Does) {
    std::ifstream in(std::filesystem::path(ANELM_SOURCE_DIR) /
                     "tests/chat/data/jinja2_reference.jsonl");
    ASSERT_TRUE(in) << "tests/chat/data/jinja2_reference.jsonl is missing";
    std::string line;
    std::getline(in, line);
    const ojson contexts = ojson::parse(line)["contexts"];
    const auto templates = test::shared_path("tokenizers/chat-templates");
    std::map<std::string, int> passed, total;
    int skipped = 0;
    while (std::getline(in, line)) {
        const ojson c = ojson::parse(line);
        std::string source;
        if (c.contains("template_file")) {
            if (!std::filesystem::exists(templates / c["template_file"].get<std::string>())) {
                ++skipped;
                continue;
            }
            source = read_text(templates / c["template_file"].get<std::string>());
        } else {
            source = c["template"];
        }
        const ojson& context =
            c["context"].is_string() ? contexts[c["context"].get<std::string>()] : c["context"];
        const std::string kind = c["kind"];
        ++total[kind];
        std::string got;
        bool failed = false;
        try {
            got = Template(source, "t").render(context);
        } catch (const Error& e) {
            got = e.what();
            failed = true;
        }
        std::string want;
        if (c.contains("error")) {
            const std::string message = c["error"];
            want = c["line"].is_number() ? fmt::format("t:{}: {}", c["line"].get<int>(), message)
                                         : message;
            const bool same =
                failed && (c["line"].is_number()
                               ? got == want
                               : got.size() >= want.size() &&
                                     got.compare(got.size() - want.size(), want.size(), want) == 0);
            EXPECT_TRUE(same) << kind << " case " << ojson(source).dump()
                              << "\n  want error: " << want << "\n  got: " << got;
            passed[kind] += same;
        } else {
            want = dated_today(c["output"]);
            EXPECT_FALSE(failed) << kind << " case " << ojson(source).dump()
                                 << "\n  error: " << got;
            EXPECT_EQ(got, want) << kind << " case " << ojson(source).dump();
            passed[kind] += !failed && got == want;
        }
    }
    for (const auto& [kind, n] : total)
        std::printf("  %-12s %d/%d\n", kind.c_str(), passed[kind], n);
    if (skipped) std::printf("  %d chat cases skipped: shared chat templates absent\n", skipped);
}

}  // namespace
}  // namespace anelm::jinja

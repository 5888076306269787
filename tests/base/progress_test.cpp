#include "base/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace anelm {
namespace {

std::string read_all(std::FILE* f) {
    std::rewind(f);
    std::string text;
    char buffer[256];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, f)) text.append(buffer, n);
    return text;
}

int count_lines(const std::string& text) {
    int lines = 0;
    for (char c : text) lines += c == '\n';
    return lines;
}

TEST(ProgressBar, OffTerminalPrintsOneLinePerTenthAndAFinalLine) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        ProgressBar bar("work", f);
        auto report = bar.callback();
        for (int64_t done = 1; done <= 1000; ++done) report(done, 1000);
    }  // the destructor finishes the bar
    std::string text = read_all(f);
    std::fclose(f);
    EXPECT_EQ(count_lines(text), 10) << text;  // 10%..90%, then 100% from finish()
    EXPECT_EQ(text.find('\r'), std::string::npos);
    EXPECT_NE(text.find("work [##########----------]  50%"), std::string::npos) << text;
    EXPECT_NE(text.find("work [####################] 100%"), std::string::npos) << text;
    EXPECT_NE(text.find("ETA"), std::string::npos) << text;
}

TEST(ProgressBar, NothingIsPrintedWithoutWork) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    { ProgressBar bar("idle", f); }
    EXPECT_EQ(read_all(f), "");
    std::fclose(f);
}

TEST(ProgressBar, FinishIsIdempotent) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        ProgressBar bar("once", f);
        bar.update(3, 4);
        bar.finish();
        bar.finish();
        bar.update(4, 4);  // ignored after finish
    }
    std::string text = read_all(f);
    std::fclose(f);
    EXPECT_EQ(count_lines(text), 2) << text;  // 70% line, then the final 75% line
    EXPECT_NE(text.find(" 75%"), std::string::npos) << text;
}

}  // namespace
}  // namespace anelm

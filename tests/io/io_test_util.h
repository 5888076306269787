// Helpers for the io tests: a scratch folder per test, raw files, and checks
// that an Error's one-line message names what it should.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>
#include <string_view>

#include "base/error.h"
#include "test_support.h"

namespace anelm::test {

// A fixture with a fresh scratch folder, removed afterwards.
class ScratchDir : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir_ = temp_dir(std::string(info->test_suite_name()) + "-" + info->name());
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::filesystem::path dir_;
};

inline void write_file(const std::string& path, std::string_view bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(out.good()) << path;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs fn, expects an anelm::Error, and returns its message ("" if none).
template <typename F>
std::string error_of(F&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    ADD_FAILURE() << "expected an anelm::Error";
    return "";
}

// Expects `message` to be one line that starts with `prefix` and contains every one of `parts`.
inline void expect_message(const std::string& message, std::string_view prefix,
                           std::initializer_list<std::string_view> parts) {
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_TRUE(message.starts_with(prefix))
        << "message \"" << message << "\" does not start with \"" << prefix << "\"";
    for (std::string_view part : parts)
        EXPECT_NE(message.find(part), std::string::npos)
            << "message \"" << message << "\" does not contain \"" << part << "\"";
}

// Expects fn to throw an Error on one line that contains every one of `parts`.
template <typename F>
void expect_error(F&& fn, std::initializer_list<std::string_view> parts) {
    expect_message(error_of(fn), "", parts);
}

}  // namespace anelm::test

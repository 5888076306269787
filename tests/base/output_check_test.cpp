#include "base/output_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p, const std::string& text = "x") {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

TEST(OutputCheck, ForceNeedsEveryFileListed) {
    const fs::path out = test::temp_dir("output-check-list") / "out";
    touch(out / "a.txt");
    touch(out / "pkg.mlpackage" / "Data" / "weight.bin");
    fs::create_directories(out / "empty");  // a folder holds nothing to lose
    write_output_list(out);
    EXPECT_THROW(check_output_folder(out, false), Error);
    EXPECT_NO_THROW(check_output_folder(out, true));

    touch(out / ".DS_Store");  // Finder's, in any folder it shows
    EXPECT_NO_THROW(check_output_folder(out, true));
    touch(out / "pkg.mlpackage" / "Data" / "notes.txt");
    EXPECT_THROW(check_output_folder(out, true), Error);
    fs::remove(out / "pkg.mlpackage" / "Data" / "notes.txt");
    // A link is not the file anelm wrote, wherever it points.
    fs::create_symlink(out / "a.txt", out / "link");
    EXPECT_THROW(check_output_folder(out, true), Error);
    fs::remove(out / "link");
    fs::remove(out / "a.txt");  // a listed file gone: still anelm's folder
    EXPECT_NO_THROW(check_output_folder(out, true));
}

TEST(OutputCheck, InputsAreNeverAnOutput) {
    const fs::path dir = test::temp_dir("output-check-apart");
    touch(dir / "model" / "config.json");
    const std::vector<std::string> inputs = {(dir / "model").string()};
    for (const fs::path& out : {dir, dir / "model", dir / "model" / "sub", dir / "." / "model"})
        EXPECT_THROW(check_output_folder(out, true, inputs), Error) << out;
    EXPECT_NO_THROW(check_output_folder(dir / "model2", true, inputs));
    EXPECT_THROW(check_output_file(dir / "model" / "r.html", inputs), Error);
    EXPECT_THROW(check_output_file(dir / "model" / "config.json", inputs), Error);
    // Through a link to the model's folder.
    fs::create_directory_symlink(dir / "model", dir / "alias");
    EXPECT_THROW(check_output_folder(dir / "alias" / "out", false, inputs), Error);
}

TEST(OutputCheck, AReportReplacesOnlyAReport) {
    const fs::path dir = test::temp_dir("output-check-file");
    EXPECT_NO_THROW(check_output_file(dir / "new.html"));
    touch(dir / "old.html", "<!DOCTYPE html>\n" + std::string(report_mark) + "\n<html>");
    EXPECT_NO_THROW(check_output_file(dir / "old.html"));
    touch(dir / "mine.html", "<html>");
    EXPECT_THROW(check_output_file(dir / "mine.html"), Error);
    fs::create_directories(dir / "folder.html");
    EXPECT_THROW(check_output_file(dir / "folder.html"), Error);
    EXPECT_THROW(check_output_file(dir / "missing" / "r.html"), Error);
}

TEST(OutputCheck, FolderPathDropsATrailingSeparator) {
    EXPECT_EQ(folder_path("out/"), fs::path("out"));
    EXPECT_EQ(folder_path("a/b//"), fs::path("a/b"));
    EXPECT_EQ(folder_path("out"), fs::path("out"));
    EXPECT_EQ(folder_path("/"), fs::path("/"));
}

}  // namespace
}  // namespace anelm

// What `--force` may replace and what every output is checked for before the
// work starts: an output that is, lies inside or holds the input model is
// refused; --force replaces an empty folder or anelm's own output (the files
// its .anelm-output lists) and nothing else; a report replaces only an
// earlier report; a llama2.c checkpoint without its tokenizer and a report
// into a missing folder fail at once, on one line, before any long work.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "run_anelm.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

std::string word(const fs::path& p) {
    return "'" + p.string() + "'";
}

std::string read_file(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

void write_file(const fs::path& p, const std::string& text) {
    std::ofstream(p, std::ios::binary) << text;
}

// A refusal: exit 1 and one line naming `path` and saying `why`.
void expect_refused(const test::CommandResult& r, const fs::path& path, const std::string& why) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.rfind("anelm: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(path.string()), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
}

// Small and quick to convert.
const std::string convert_options = " --ctx 32 --batch 8 --chunks 1 --lut-ffn none --lut-head none";

TEST(ForceOutput, ConvertRefusesAnOutputHoldingTheSource) {
    const fs::path proj = test::temp_dir("force-holds");
    const fs::path model = proj / "model";
    synth_write("tiny-llama", model.string());
    write_file(proj / "notes.txt", "mine");
    const auto r = test::run_anelm("convert " + word(model) + " -o " + word(proj) + " --force" +
                                   convert_options);
    expect_refused(r, proj, "holds the input");
    EXPECT_TRUE(fs::exists(model / "model.safetensors"));
    EXPECT_EQ(read_file(proj / "notes.txt"), "mine");
}

TEST(ForceOutput, ConvertRefusesTheSourceOrAFolderInsideIt) {
    const fs::path model = test::temp_dir("force-inside") / "model";
    synth_write("tiny-llama", model.string());
    expect_refused(test::run_anelm("convert " + word(model) + " -o " + word(model) + " --force" +
                                   convert_options),
                   model, "is the input");
    // Without --force too: the conversion would land among the model's files.
    const fs::path inside = model / "converted";
    expect_refused(
        test::run_anelm("convert " + word(model) + " -o " + word(inside) + convert_options), inside,
        "lies inside the input");
    EXPECT_FALSE(fs::exists(inside));
    EXPECT_TRUE(fs::exists(model / "model.safetensors"));
}

TEST(ForceOutput, SynthRefusesAFolderWithFilesAnelmDidNotWrite) {
    const fs::path keep = test::temp_dir("force-foreign") / "keep";
    fs::create_directories(keep);
    write_file(keep / "data.txt", "mine");
    expect_refused(test::run_anelm("synth tiny-llama -o " + word(keep) + " --force"), keep,
                   "anelm did not write");
    EXPECT_EQ(read_file(keep / "data.txt"), "mine");

    // anelm's own output with a file added to it: the list does not name it.
    const fs::path out = keep.parent_path() / "out";
    ASSERT_EQ(test::run_anelm("synth tiny-llama -o " + word(out)).exit_code, 0);
    fs::create_directories(out / "sub");
    write_file(out / "sub" / "notes.txt", "mine");
    expect_refused(test::run_anelm("synth tiny-qwen3 -o " + word(out) + " --force"), out,
                   "sub/notes.txt");
    EXPECT_EQ(read_file(out / "sub" / "notes.txt"), "mine");

    // A file where the folder would go.
    const fs::path file = keep.parent_path() / "file";
    write_file(file, "mine");
    expect_refused(test::run_anelm("synth tiny-llama -o " + word(file) + " --force"), file,
                   "not a folder anelm wrote");
    EXPECT_EQ(read_file(file), "mine");
}

TEST(ForceOutput, ForceReplacesAnelmsOwnOutputAndEmptyFolders) {
    const fs::path dir = test::temp_dir("force-own");
    const fs::path synth = dir / "synth";
    fs::create_directories(synth);
    ASSERT_EQ(test::run_anelm("synth tiny-llama -o " + word(synth)).exit_code, 1);  // exists
    ASSERT_EQ(test::run_anelm("synth tiny-llama -o " + word(synth) + " --force").exit_code, 0);
    const std::string llama = read_file(synth / "config.json");
    const auto again = test::run_anelm("synth tiny-qwen3 -o " + word(synth) + " --force");
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_NE(read_file(synth / "config.json"), llama);
    EXPECT_NE(read_file(synth / ".anelm-output").find("model.safetensors"), std::string::npos);

    const fs::path out = dir / "converted";
    const std::string convert = "convert " + word(synth) + " -o " + word(out) + convert_options;
    const auto first = test::run_anelm(convert);
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_NE(read_file(out / ".anelm-output").find("meta.yaml"), std::string::npos);
    expect_refused(test::run_anelm(convert), out, "already exists");
    // Spelt with a trailing separator: still the folder, replaced from beside it.
    const auto second = test::run_anelm("convert " + word(synth) + " -o " + word(out / "") +
                                        convert_options + " --argmax --force");
    ASSERT_EQ(second.exit_code, 0) << second.err;
    EXPECT_NE(read_file(out / "meta.yaml").find("argmax_in_model: true"), std::string::npos);
}

TEST(ForceOutput, ConvertOfAModelWithoutTokenizerIsRefusedBeforeWork) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const fs::path dir = test::temp_dir("force-tokenizer");
    const fs::path stories = test::shared_path("models/stories260K");
    const fs::path out = dir / "out";
    expect_refused(test::run_anelm("convert " + word(stories / "stories260K.bin") + " -o " +
                                   word(out) + convert_options),
                   stories / "stories260K.bin", "--tokenizer");
    EXPECT_FALSE(fs::exists(out));
}

TEST(ForceOutput, ConvertOfAFolderWithoutTokenizerIsRefusedBeforeWork) {
    const fs::path dir = test::temp_dir("force-no-tokenizer");
    const fs::path model = dir / "model";
    synth_write("tiny-llama", model.string());
    fs::remove(model / "tokenizer.json");
    const fs::path out = dir / "out";
    // One line: no stage had started.
    expect_refused(test::run_anelm("convert " + word(model) + " -o " + word(out) + convert_options),
                   model, "tokenizer.json");
    EXPECT_FALSE(fs::exists(out));
}

TEST(ForceOutput, ReportsAreCheckedBeforeTheCalibration) {
    const fs::path dir = test::temp_dir("force-report");
    const fs::path model = dir / "model";
    synth_write("tiny-llama", model.string(), DType::f32, 1);
    const std::string doctor = "doctor " + word(model) + " -n 4 -t 1 --report ";

    // One line, no progress bar: the calibration never started.
    const fs::path missing = dir / "missing" / "r.html";
    const auto r = test::run_anelm(doctor + word(missing));
    expect_refused(r, missing, "does not exist");
    EXPECT_EQ(r.err.find("doctor ["), std::string::npos) << r.err;

    const fs::path notes = dir / "notes.html";
    write_file(notes, "<p>mine</p>");
    expect_refused(test::run_anelm(doctor + word(notes)), notes, "anelm did not write it");
    EXPECT_EQ(read_file(notes), "<p>mine</p>");
    expect_refused(test::run_anelm(doctor + word(model / "config.json")), model / "config.json",
                   "lies inside the input");

    // An earlier report is replaced.
    const fs::path report = dir / "r.html";
    ASSERT_EQ(test::run_anelm(doctor + word(report)).exit_code, 0);
    write_file(report, read_file(report) + "old");
    const auto again = test::run_anelm(doctor + word(report));
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_FALSE(read_file(report).ends_with("old"));

    const fs::path svg = dir / "notes.svg";
    write_file(svg, "<svg/>");
    expect_refused(test::run_anelm("plan tiny-llama --svg " + word(svg)), svg,
                   "anelm did not write it");
    EXPECT_EQ(read_file(svg), "<svg/>");
    expect_refused(test::run_anelm("plan tiny-llama --svg " + word(missing)), missing,
                   "does not exist");
}

}  // namespace
}  // namespace anelm

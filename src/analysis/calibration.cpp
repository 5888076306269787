// The texts the doctor runs: short, but each stresses something different.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/doctor.h"
#include "base/error.h"
#include "chat/chat_template.h"

namespace anelm {

std::vector<CalibrationText> default_calibration_texts() {
    std::string repetition;
    for (int i = 0; i < 40; ++i) repetition += "the cat sat on the mat. ";
    return {
        {"chat",
         "Hi! Can you explain, in two short paragraphs, why the sky looks blue during the day "
         "and red at sunset? Please keep it simple enough for a twelve-year-old."},
        {"code",
         "def merge_sorted(a, b):\n    out, i, j = [], 0, 0\n    while i < len(a) and j < len(b):\n"
         "        if a[i] <= b[j]:\n            out.append(a[i]); i += 1\n        else:\n"
         "            out.append(b[j]); j += 1\n    return out + a[i:] + b[j:]\n\n"
         "# Write unit tests for merge_sorted covering empty lists and duplicates.\n"},
        {"repetition", repetition},
        {"multilingual",
         "Bonjour, comment ça va ? Der schnelle braune Fuchs springt über den faulen Hund. "
         "Быстрая коричневая лиса прыгает через ленивую собаку. 敏捷的棕色狐狸跳过了懒狗。"
         "素早い茶色の狐がのろまな犬を飛び越える。 الثعلب البني السريع يقفز فوق الكلب الكسول. "
         "🦊🐕 ¡Olé! Ελληνικά, हिन्दी, 한국어."},
    };
}

std::vector<CalibrationText> read_calibration_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open", path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();

    std::vector<CalibrationText> prompts;
    const size_t first = text.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && text[first] == '[') {
        nlohmann::json list;
        try {
            list = nlohmann::json::parse(text);
        } catch (const nlohmann::json::exception& e) {
            fail("{}: not valid JSON: {}", path, e.what());
        }
        for (size_t i = 0; i < list.size(); ++i) {
            if (!list[i].is_string()) fail("{}: item {} is not a string", path, i);
            prompts.push_back({"prompt", list[i].get<std::string>()});
        }
    } else {
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.find_first_not_of(" \t") != std::string::npos)
                prompts.push_back({"prompt", line});
        }
    }
    if (prompts.empty()) fail("{}: no prompts", path);
    return prompts;
}

namespace {

// The chat text goes through the model's chat template when it has one, as a
// chat application would send it.
std::string as_chat(const std::string& model_path, const std::string& text) {
    try {
        const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", text}}};
        return ChatTemplate::load(model_path).render(messages, true);
    } catch (const Error&) {
        return text;
    }
}

}  // namespace

std::vector<DoctorPrompt> calibration_prompts(const Model& model, const std::string& model_path,
                                              const std::string& prompts_file, int64_t n_tokens) {
    if (n_tokens < 1) fail("calibration: at least 1 token per prompt, got {}", n_tokens);
    if (!model.tokenizer) fail("{}: calibration prompts need a tokenizer", model_path);
    const bool built_in = prompts_file.empty();
    const std::vector<CalibrationText> texts =
        built_in ? default_calibration_texts() : read_calibration_file(prompts_file);
    std::vector<DoctorPrompt> prompts;
    for (size_t i = 0; i < texts.size(); ++i) {
        const bool chat = built_in && std::string_view(texts[i].name) == "chat";
        DoctorPrompt p;
        p.name = built_in ? texts[i].name : fmt::format("prompt {}", i + 1);
        p.tokens = model.tokenizer->encode(
            chat ? as_chat(model_path, texts[i].text) : texts[i].text, !chat);
        if (static_cast<int64_t>(p.tokens.size()) > n_tokens)
            p.tokens.resize(static_cast<size_t>(n_tokens));
        if (!p.tokens.empty()) prompts.push_back(std::move(p));
    }
    return prompts;
}

}  // namespace anelm

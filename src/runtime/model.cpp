#include "runtime/model.h"

#include "base/error.h"

namespace anelm {

std::vector<int32_t> Model::stop_ids() const {
    if (!spec().eos_token_ids.empty()) return spec().eos_token_ids;
    return tokenizer ? tokenizer->eos_ids() : std::vector<int32_t>{};
}

void check_tokenizer_fits(const Tokenizer& tokenizer, const std::string& tokenizer_path,
                          int64_t n_vocab, const std::string& model_path) {
    if (tokenizer.n_vocab() > n_vocab)
        fail("{}: the tokenizer has {} ids, but {} embeds only {} (n_vocab)", tokenizer_path,
             tokenizer.n_vocab(), model_path, n_vocab);
}

Model open_model(const std::string& path, const std::string& tokenizer_path, bool need_tokenizer) {
    Model model;
    model.path = path;
    model.loaded = load_model(path);
    const std::string& tok = tokenizer_path.empty() ? model.loaded.tokenizer_path : tokenizer_path;
    if (!tok.empty()) {
        model.tokenizer = load_tokenizer(tok);
        check_tokenizer_fits(*model.tokenizer, tok, model.spec().n_vocab, path);
    } else if (need_tokenizer) {
        fail("{}: no tokenizer found (give one with --tokenizer)", path);
    }
    return model;
}

}  // namespace anelm

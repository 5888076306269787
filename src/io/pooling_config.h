// How an embedding model pools its tokens' hidden states into one vector, as
// its sentence-transformers files say: modules.json names a Pooling module,
// whose folder's config.json sets one pooling_mode_* flag.
#pragma once

#include <optional>
#include <string>

namespace anelm {

enum class Pooling { mean, last, cls };

const char* pooling_name(Pooling p);
Pooling pooling_from_name(const std::string& name);  // mean, last or cls; throws Error

// The pooling of the Hugging Face folder `dir`; none without a modules.json
// naming a Pooling module. Throws Error naming the file for a malformed one or
// a mode other than mean, last token or CLS.
std::optional<Pooling> read_pooling(const std::string& dir);

// `flag` (a pooling_name) when not empty, else what the model at `path`
// declares, else mean; `source` says which, for a message.
struct PoolingChoice {
    Pooling pooling = Pooling::mean;
    const char* source = "the default";
};
PoolingChoice choose_pooling(const std::string& path, const std::string& flag);

}  // namespace anelm

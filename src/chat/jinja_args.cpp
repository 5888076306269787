#include <algorithm>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"

namespace anelm::jinja {

ArgBinder::ArgBinder(std::string_view function, const CallArgs& args,
                     std::initializer_list<std::string_view> params)
    : bound_(params.size(), nullptr) {
    if (args.positional.size() > params.size())
        raise("{}() takes at most {} argument(s) ({} given)", function, params.size(),
              args.positional.size());
    for (size_t i = 0; i < args.positional.size(); ++i) bound_[i] = &args.positional[i];
    for (const auto& [name, value] : args.keyword) {
        const auto it = std::find(params.begin(), params.end(), name);
        if (it == params.end())
            raise("{}() got an unexpected keyword argument {}", function, string_repr(name));
        const size_t i = static_cast<size_t>(it - params.begin());
        if (bound_[i])
            raise("{}() got multiple values for argument {}", function, string_repr(name));
        bound_[i] = &value;
    }
}

}  // namespace anelm::jinja

#include "io/weight_store.h"

#include <fmt/ranges.h>

#include "base/error.h"

namespace anelm {

void WeightStore::add(std::string name, TensorView view, std::string origin) {
    auto [it, inserted] = tensors_.try_emplace(std::move(name), Entry{std::move(view), origin});
    if (!inserted)
        fail("{}: tensor {} is defined twice (also in {})", origin, it->first, it->second.origin);
}

void WeightStore::keep_alive(std::shared_ptr<const MappedFile> file) {
    files_.push_back(std::move(file));
}

void WeightStore::release(std::span<const std::byte> bytes) const {
    for (const auto& file : files_) file->release(bytes);
}

const TensorView* WeightStore::find(std::string_view name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second.view;
}

const TensorView& WeightStore::get(std::string_view name) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail("{}: missing tensor {}", default_origin_, name);
    return it->second.view;
}

const TensorView& WeightStore::get(std::string_view name,
                                   const std::vector<int64_t>& expected_shape) const {
    auto it = tensors_.find(name);
    if (it == tensors_.end()) fail("{}: missing tensor {}", default_origin_, name);
    const TensorView& view = it->second.view;
    if (view.shape != expected_shape)
        fail("{}: tensor {} has shape [{}], expected [{}]", it->second.origin, name,
             fmt::join(view.shape, ", "), fmt::join(expected_shape, ", "));
    return view;
}

std::vector<std::string> WeightStore::names() const {
    std::vector<std::string> out;
    out.reserve(tensors_.size());
    for (const auto& [name, entry] : tensors_) out.push_back(name);
    return out;
}

size_t WeightStore::total_bytes() const {
    size_t total = 0;
    for (const auto& [name, entry] : tensors_) total += entry.view.n_bytes();
    return total;
}

}  // namespace anelm

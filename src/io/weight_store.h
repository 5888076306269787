// Named weight tensors, with whatever keeps their bytes alive (mapped files or
// owned buffers). Names follow Hugging Face's (model.layers.0.self_attn.q_proj.weight).
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/tensor.h"

namespace anelm {

class WeightStore {
public:
    // Registers a tensor; `origin` (a file path) is used in messages.
    void add(std::string name, TensorView view, std::string origin);
    void keep_alive(std::shared_ptr<const void> owner) { owners_.push_back(std::move(owner)); }
    // A file the views point into; release() finds its pages through it.
    void keep_alive(std::shared_ptr<const MappedFile> file);
    const std::vector<std::shared_ptr<const MappedFile>>& files() const { return files_; }
    // Drops the resident pages of a mapped file inside `bytes` (see
    // MappedFile::release); bytes the store does not map are left alone.
    void release(std::span<const std::byte> bytes) const;

    const TensorView* find(std::string_view name) const;
    // Throws Error "<origin>: missing tensor NAME" or a shape mismatch naming both shapes.
    const TensorView& get(std::string_view name) const;
    const TensorView& get(std::string_view name, const std::vector<int64_t>& expected_shape) const;

    size_t size() const { return tensors_.size(); }
    std::vector<std::string> names() const;
    size_t total_bytes() const;
    const std::string& origin() const { return default_origin_; }
    void set_origin(std::string origin) { default_origin_ = std::move(origin); }

private:
    struct Entry {
        TensorView view;
        std::string origin;
    };
    std::map<std::string, Entry, std::less<>> tensors_;
    std::vector<std::shared_ptr<const void>> owners_;
    std::vector<std::shared_ptr<const MappedFile>> files_;
    std::string default_origin_;
};

}  // namespace anelm

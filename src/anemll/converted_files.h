// The packages of a converted directory, found from its meta.yaml the way
// ANEMLL's runners find them: names relative to the yaml's folder, every
// chunk from the first one's `_chunk_01of` part. meta.yaml records compiled
// `.mlmodelc` names; where one is absent (nothing compiles them off a Mac) the
// `.mlpackage` of the same stem is used.
#pragma once

#include <string>
#include <vector>

#include "anemll/meta_yaml.h"

namespace anelm::anemll {

struct ConvertedFiles {
    MetaYaml meta;
    std::string dir;  // the folder of meta.yaml, which also holds the tokenizer files
    std::string embeddings, lm_head;  // paths; empty when monolithic
    std::vector<std::string> chunks;  // chunk 1 to num_chunks; empty when monolithic
    std::string monolithic;           // path; empty unless monolithic
};

// Reads meta_path and finds every package it names. Throws Error
// "META: model_info.parameters.KEY: ..." naming the file that is missing.
ConvertedFiles find_converted_files(const std::string& meta_path);

}  // namespace anelm::anemll

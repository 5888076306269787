// A .mlpackage directory: Manifest.json → Data/<root model path> (the Model
// protobuf) and the MILBlob files its values point at through "@model_path/...",
// the folder that holds model.mlmodel.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "coreml/blob_table.h"
#include "coreml/manifest.h"
#include "coreml/milblob.h"
#include "coreml/proto/model.pb.h"

namespace anelm::coreml {

namespace spec = ::CoreML::Specification;

// What coremltools' BlobFileValue.fileName holds for the one weight file.
inline constexpr const char* weight_file_name = "@model_path/weights/weight.bin";

// A package read and checked: the manifest, an ML Program model, and every
// blob a value refers to (its record, data type and element count).
class Package : public BlobTable {
public:
    explicit Package(const std::filesystem::path& dir, BlobMemory memory = BlobMemory::mapped);

    const std::filesystem::path& path() const { return dir_; }
    const Manifest& manifest() const { return manifest_; }
    const spec::Model& model() const { return model_; }
    const std::filesystem::path& model_path() const { return model_path_; }

    // The blob behind a BlobFileValue, checked against the value's tensor type.
    Blob blob(const spec::MILSpec::Value& value) const override;

private:
    void open_blob_file(const std::string& file_name);

    std::filesystem::path dir_;
    Manifest manifest_;
    std::filesystem::path model_path_;
    spec::Model model_;
    BlobMemory memory_;
    std::map<std::string, std::unique_ptr<BlobFile>> blob_files_;  // by fileName
};

// Writes a package into a temporary folder beside `dir`: blobs first through
// weights(), then finish() writes model.mlmodel and Manifest.json and renames
// the folder to `dir`. Abandoned (destroyed unfinished), it removes the folder.
class PackageWriter {
public:
    explicit PackageWriter(std::filesystem::path dir, Manifest manifest = default_manifest(),
                           bool overwrite = false);
    ~PackageWriter();
    PackageWriter(const PackageWriter&) = delete;
    PackageWriter& operator=(const PackageWriter&) = delete;

    // The weight file that weight_file_name refers to.
    BlobWriter& weights();
    void finish(const spec::Model& model);

private:
    std::filesystem::path dir_;
    std::filesystem::path tmp_;
    Manifest manifest_;
    bool overwrite_;
    std::filesystem::path model_dir_;  // inside tmp_
    std::unique_ptr<BlobWriter> weights_;
    bool finished_ = false;
};

// Writes `in` again at `out` with the same manifest: every referenced blob is
// copied into one weight.bin in its original order, offsets updated.
void copy_package(const Package& in, const std::filesystem::path& out, bool overwrite = false);

}  // namespace anelm::coreml

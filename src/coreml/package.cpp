#include "coreml/package.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "coreml/mil_types.h"
#include "coreml/model_values.h"
#include "coreml/proto_diagnose.h"

namespace anelm::coreml {

namespace fs = std::filesystem;
namespace mil = spec::MILSpec;

namespace {

constexpr std::string_view model_path_prefix = "@model_path/";

void check_program(const std::string& path, const spec::Model& model) {
    if (!model.has_mlprogram())
        fail("{}: Model.mlProgram (field 502) is absent: not an ML Program", path);
    const mil::Program& program = model.mlprogram();
    if (program.version() != 1)
        fail("{}: mlProgram.version is {}, expected 1", path, program.version());
    if (program.functions().empty()) fail("{}: mlProgram.functions is empty", path);
    for (const auto& [name, function] : program.functions())
        if (!function.block_specializations().contains(function.opset()))
            fail("{}: function {}: opset \"{}\" has no block in block_specializations", path, name,
                 function.opset());
}

}  // namespace

Package::Package(const fs::path& dir, BlobMemory memory) : dir_(dir), memory_(memory) {
    if (!fs::is_directory(dir)) fail("{}: not a directory", dir.string());
    manifest_ = read_manifest((dir / "Manifest.json").string());
    model_path_ = dir / "Data" / manifest_.root_model().path;
    const std::string path = model_path_.string();
    {
        const MappedFile file(path);
        // protobuf takes an int size.
        if (file.size() > INT_MAX)
            fail("{}: {} bytes, more than the {} a Model protobuf can have", path, file.size(),
                 INT_MAX);
        if (!model_.ParseFromArray(file.data(), static_cast<int>(file.size())))
            fail("{}: not a Core ML Model protobuf: {}", path,
                 diagnose_parse_failure(file.bytes(), *spec::Model::descriptor()));
    }
    check_program(path, model_);
    for_each_value(model_, [&](const mil::Value& value, const std::string& where) {
        if (!value.has_blobfilevalue()) return;
        try {
            open_blob_file(value.blobfilevalue().filename());
            blob(value);
        } catch (const Error& e) {
            fail("{} ({}: {})", e.what(), path, where);
        }
    });
}

void Package::open_blob_file(const std::string& file_name) {
    if (blob_files_.contains(file_name)) return;
    if (!file_name.starts_with(model_path_prefix))
        fail("{}: blob file \"{}\" does not start with {}", model_path_.string(), file_name,
             model_path_prefix);
    const fs::path path = model_path_.parent_path() / file_name.substr(model_path_prefix.size());
    blob_files_.emplace(file_name, std::make_unique<BlobFile>(path.string(), memory_));
}

Blob Package::blob(const mil::Value& value) const {
    const mil::Value::BlobFileValue& ref = value.blobfilevalue();
    const auto it = blob_files_.find(ref.filename());
    if (it == blob_files_.end())
        fail("{}: blob file \"{}\" is not one of this package's", model_path_.string(),
             ref.filename());
    const BlobFile& file = *it->second;
    const Blob b = file.blob(ref.offset());
    if (!value.type().has_tensortype())
        fail("{}: blob at offset {} belongs to a value that is not a tensor", file.path(),
             ref.offset());
    const mil::TensorType& type = value.type().tensortype();
    const auto expected = blob_dtype_of(type.datatype());
    if (!expected || *expected != b.dtype)
        fail("{}: blob at offset {} holds {}, the value's type is {}", file.path(), ref.offset(),
             blob_dtype_name(b.dtype), mil_dtype_name(type.datatype()));
    const std::optional<int64_t> n = element_count(tensor_shape(type));
    if (!n)
        fail(
            "{}: blob at offset {} belongs to a value of type {}: an unknown shape or more than "
            "2^40 elements",
            file.path(), ref.offset(), value_type_text(value.type()));
    if (b.numel() != static_cast<uint64_t>(*n))
        fail("{}: blob at offset {} holds {} elements, the value's type {} has {}", file.path(),
             ref.offset(), b.numel(), value_type_text(value.type()), *n);
    return b;
}

PackageWriter::PackageWriter(fs::path dir, Manifest manifest, bool overwrite)
    : dir_(std::move(dir)), manifest_(std::move(manifest)), overwrite_(overwrite) {
    // First, so that an output a killed run set aside is back before the check.
    clean_up_after_killed_runs(dir_);
    if (fs::exists(dir_) && !overwrite_) fail("{}: already exists", dir_.string());
    tmp_ = partial_path(dir_);
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    model_dir_ = (tmp_ / "Data" / manifest_.root_model().path).parent_path();
    fs::create_directories(model_dir_ / "weights", ec);
    if (ec) fail("{}: cannot create: {}", (model_dir_ / "weights").string(), ec.message());
}

PackageWriter::~PackageWriter() {
    if (finished_) return;
    weights_.reset();
    std::error_code ignored;
    fs::remove_all(tmp_, ignored);
}

BlobWriter& PackageWriter::weights() {
    if (!weights_)
        weights_ = std::make_unique<BlobWriter>((model_dir_ / "weights" / "weight.bin").string());
    return *weights_;
}

void PackageWriter::finish(const spec::Model& model) {
    if (weights_) weights_->finish();
    const fs::path model_path = tmp_ / "Data" / manifest_.root_model().path;
    std::string bytes;
    {
        google::protobuf::io::StringOutputStream stream(&bytes);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);  // map entries in key order
        if (!model.SerializeToCodedStream(&coded))
            fail("{}: cannot serialize the model", model_path.string());
    }
    auto write_file = [](const fs::path& path, std::string_view text) {
        std::ofstream out(path, std::ios::binary);
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();
        if (!out) fail("{}: cannot write: {}", path.string(), std::strerror(errno));
    };
    write_file(model_path, bytes);
    write_file(tmp_ / "Manifest.json", manifest_json(manifest_));
    move_folder_into_place(tmp_, dir_, overwrite_);
    finished_ = true;
}

void copy_package(const Package& in, const fs::path& out, bool overwrite) {
    // Each distinct (file, offset) once, in file order, so a canonical file keeps its offsets.
    using BlobKey = std::pair<std::string, uint64_t>;
    std::map<BlobKey, const mil::Value*> first_use;
    for_each_value(in.model(), [&](const mil::Value& v, const std::string&) {
        if (v.has_blobfilevalue())
            first_use.emplace(BlobKey(v.blobfilevalue().filename(), v.blobfilevalue().offset()),
                              &v);
    });
    PackageWriter writer(out, in.manifest(), overwrite);
    std::map<BlobKey, uint64_t> new_offset;
    for (const auto& [key, value] : first_use) {
        const Blob b = in.blob(*value);
        new_offset[key] = writer.weights().add(b.dtype, b.numel(), b.data);
    }
    spec::Model model = in.model();
    for_each_value(model, [&](mil::Value& v, const std::string&) {
        if (!v.has_blobfilevalue()) return;
        mil::Value::BlobFileValue& ref = *v.mutable_blobfilevalue();
        ref.set_offset(new_offset.at(BlobKey(ref.filename(), ref.offset())));
        ref.set_filename(weight_file_name);
    });
    writer.finish(model);
}

}  // namespace anelm::coreml

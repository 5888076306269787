// Why protobuf refused some bytes: protobuf's parser only says no, so this
// walks the wire format along the message's descriptor to name the field and
// byte offset where the data stops making sense.
#pragma once

#include <google/protobuf/descriptor.h>
#include <cstddef>
#include <span>
#include <string>

namespace anelm::coreml {

// "field mlProgram.functions.value.opset at byte 812: length 4000 runs past the end (1538 bytes)".
std::string diagnose_parse_failure(std::span<const std::byte> bytes,
                                   const google::protobuf::Descriptor& type);

}  // namespace anelm::coreml

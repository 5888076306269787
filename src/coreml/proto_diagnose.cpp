#include "coreml/proto_diagnose.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

namespace anelm::coreml {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;

// Reads a base-128 varint at bytes[pos]; nothing if it is cut off or longer than 10 bytes.
std::optional<uint64_t> read_varint(std::span<const std::byte> bytes, size_t& pos) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70 && pos < bytes.size(); shift += 7) {
        const auto b = static_cast<uint8_t>(bytes[pos++]);
        v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    return std::nullopt;
}

// Structural UTF-8 check (lead and continuation bytes), as proto3 strings must be.
bool valid_utf8(std::span<const std::byte> s) {
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<uint8_t>(s[i]);
        const size_t n = c < 0x80             ? 1
                         : (c & 0xe0) == 0xc0 ? 2
                         : (c & 0xf0) == 0xe0 ? 3
                         : (c & 0xf8) == 0xf0 ? 4
                                              : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k)
            if ((static_cast<uint8_t>(s[i + k]) & 0xc0) != 0x80) return false;
        i += n;
    }
    return true;
}

// Messages nested deeper are a problem in themselves, as they are to protobuf
// (whose limit is 100); the walk's recursion stays bounded.
constexpr int max_depth = 100;

// The first problem in bytes[begin, end) read as `type` (null: unknown field
// content, checked only for framing) at nesting `depth`, or "" when there is none.
std::string walk(std::span<const std::byte> bytes, size_t begin, size_t end, const Descriptor* type,
                 const std::string& path, int depth) {
    if (depth > max_depth)
        return fmt::format("{} at byte {}: messages nested more than {} deep", path, begin,
                           max_depth);
    size_t pos = begin;
    const std::span<const std::byte> range = bytes.first(end);
    while (pos < end) {
        const size_t at = pos;
        const auto tag = read_varint(range, pos);
        if (!tag) return fmt::format("{} at byte {}: truncated field tag", path, at);
        const uint64_t number = *tag >> 3;
        const int wire = static_cast<int>(*tag & 7);
        const FieldDescriptor* f = type && number <= INT32_MAX
                                       ? type->FindFieldByNumber(static_cast<int>(number))
                                       : nullptr;
        const std::string name = fmt::format("{}{}{}", path, path.empty() ? "" : ".",
                                             f ? f->name() : fmt::format("<field {}>", number));
        if (number == 0) return fmt::format("{} at byte {}: field number 0", path, at);
        switch (wire) {
            case 0:
                if (!read_varint(range, pos))
                    return fmt::format("field {} at byte {}: truncated varint", name, at);
                break;
            case 1:
            case 5: {
                const size_t n = wire == 1 ? 8 : 4;
                if (end - pos < n)
                    return fmt::format("field {} at byte {}: {} bytes expected, {} left", name, at,
                                       n, end - pos);
                pos += n;
                break;
            }
            case 2: {
                const auto len = read_varint(range, pos);
                if (!len) return fmt::format("field {} at byte {}: truncated length", name, at);
                if (*len > end - pos)
                    return fmt::format("field {} at byte {}: length {} runs past the end ({} left)",
                                       name, at, *len, end - pos);
                const size_t stop = pos + *len;
                if (f && f->type() == FieldDescriptor::TYPE_MESSAGE) {
                    std::string inner = walk(bytes, pos, stop, f->message_type(), name, depth + 1);
                    if (!inner.empty()) return inner;
                } else if (f && f->type() == FieldDescriptor::TYPE_STRING &&
                           !valid_utf8(bytes.subspan(pos, *len))) {
                    return fmt::format("field {} at byte {}: string is not valid UTF-8", name, at);
                }
                pos = stop;
                break;
            }
            default:
                return fmt::format("field {} at byte {}: unsupported wire type {}", name, at, wire);
        }
    }
    return "";
}

}  // namespace

std::string diagnose_parse_failure(std::span<const std::byte> bytes, const Descriptor& type) {
    std::string problem = walk(bytes, 0, bytes.size(), &type, "", 0);
    if (problem.empty())
        return fmt::format("{} bytes of invalid {} data", bytes.size(), type.name());
    return problem;
}

}  // namespace anelm::coreml

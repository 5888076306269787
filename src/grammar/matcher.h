// Recognizes a Grammar's documents byte by byte, as they are generated.
//
// The state is a set of stacks of frames (one frame per open value, innermost
// last); alternatives (anyOf, type lists) start one stack each and the ones that
// cannot take a byte drop out. Whitespace: none, except at most one space after
// ':' and ',' (where models like to put one); bounding it keeps generation from
// looping on blanks. Numbers: at most 20 integer and 20 fraction digits and a
// two-digit exponent, so that every number parses as a finite double; integers
// at most 18 digits, so that they fit an int64.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace anelm::grammar {

class Matcher {
public:
    // Before the first byte of a document of grammar. The grammar's data is shared.
    explicit Matcher(const Grammar& grammar);

    // Takes bytes if they continue a valid document; otherwise returns false and
    // the state is unchanged.
    bool advance(std::string_view bytes);
    // The bytes so far are a complete valid document.
    bool accepts_end() const;
    // Complete, and no byte can follow.
    bool finished() const;

private:
    friend class TokenFilter;

    struct Frame {
        int32_t node = -1;
        uint8_t kind = 0;              // FrameKind in matcher.cpp
        uint8_t phase = 0;             // where in the value
        uint8_t sub = 0;               // json_string::State inside a string
        uint8_t unused = 0;            // zero, so that == compares every byte
        uint32_t a = 0, b = 0, c = 0;  // per kind: counts, property or literal range
        bool operator==(const Frame&) const = default;
    };
    struct Push;

    Matcher() = default;
    // This becomes from after one byte; false when no stack takes it.
    bool step_from(const Matcher& from, uint8_t byte);
    void step(std::span<const Frame> stack, uint8_t byte);
    int consume(Frame& t, const Frame* parent, uint8_t byte, Push& push) const;
    void push_child(std::span<const Frame> prefix, const Frame& parent, int32_t node,
                    const Frame* child, uint8_t byte);
    void emit(std::span<const Frame> prefix, std::span<const Frame> top);
    bool can_end(const Frame& f) const;
    Frame start(int32_t node) const;
    void dedup();

    size_t n_stacks() const { return ends_.size(); }
    std::span<const Frame> stack(size_t k) const {
        const size_t begin = k == 0 ? 0 : ends_[k - 1];
        return {frames_.data() + begin, ends_[k] - begin};
    }
    // The string frame on top of stack k, when it is between characters.
    const Frame* open_string(size_t k) const;
    // This becomes the stacks of from that are not an open string.
    void assign_without_open_strings(const Matcher& from);
    // This becomes stack k of from with its top frame (a string) closed.
    void assign_closed(const Matcher& from, size_t k);

    Grammar grammar_{nullptr};
    std::vector<Frame> frames_;   // all stacks, one after another
    std::vector<uint32_t> ends_;  // end of each stack in frames_
};

}  // namespace anelm::grammar

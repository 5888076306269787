// Bad programs and bad inputs give one-line errors that name the function and
// the op (or the input) at fault.
#include <gtest/gtest.h>

#include <functional>

#include "base/error.h"
#include "mil_program.h"

namespace anelm::milexec::test {
namespace {

constexpr auto F32 = mil::FLOAT32;

std::string error_of(const std::function<void()>& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "no error";
}

TEST(MilErrors, UnknownOpIsNamed) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2});
    p.b.output(p.b.op("frobnicate", "bogus", {{"x", x}}, F32, {2}));
    const std::string msg = error_of([&] { Function f(p.program, "main", p.blobs); });
    EXPECT_NE(msg.find("function main, op bogus (frobnicate): unknown op"), std::string::npos)
        << msg;
}

TEST(MilErrors, MissingValueAndMissingInputAreNamed) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2});
    p.b.output(p.b.op("add", "sum", {{"x", x}, {"y", MilValue{"nowhere", F32, {2}}}}, F32, {2}));
    std::string msg = error_of([&] { Function f(p.program, "main", p.blobs); });
    EXPECT_NE(msg.find("op sum (add): input y: names no value nowhere"), std::string::npos) << msg;

    MilProgram q;
    const MilValue y = q.input("y", F32, {2});
    q.b.output(q.b.op("mul", "prod", {{"x", y}}, F32, {2}));
    msg = error_of([&] { Function f(q.program, "main", q.blobs); });
    EXPECT_NE(msg.find("op prod (mul): missing input y"), std::string::npos) << msg;
}

TEST(MilErrors, DeclaredShapeMismatchIsNamed) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2, 3});
    p.b.output(p.b.op("transpose", "t", {{"x", x}, {"perm", MilParam::i32s({1, 0})}}, F32, {2, 3}));
    Function f(p.program, "main", p.blobs);
    States states;
    const std::string msg = error_of([&] { f.run({{"x", floats(F32, {2, 3}, ramp(6))}}, states); });
    EXPECT_NE(msg.find("op t (transpose): output t has shape [3, 2], declared [2, 3]"),
              std::string::npos)
        << msg;
}

TEST(MilErrors, BadInputsAreNamed) {
    MilProgram p;
    const MilValue x = p.input("x", F32, {2});
    p.b.output(p.b.op("relu", "r", {{"x", x}}, F32, {2}));
    Function f(p.program, "main", p.blobs);
    States states;
    EXPECT_NE(error_of([&] { f.run({}, states); }).find("input x is missing"), std::string::npos);
    EXPECT_NE(error_of([&] {
                  f.run({{"x", floats(F32, {3}, ramp(3))}}, states);
              }).find("input x must be fp32[2]"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  f.run({{"x", floats(F32, {2}, ramp(2))}, {"z", floats(F32, {1}, {0})}}, states);
              }).find("z is not an input"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                  Function g(p.program, "decode", p.blobs);
              }).find("function decode: not in the program"),
              std::string::npos);
}

}  // namespace
}  // namespace anelm::milexec::test

// Stop strings end the text where they begin, even split across pieces, and
// are never shown; text that only might begin one is held back, then released.
#include <gtest/gtest.h>

#include "server/stop_text.h"

namespace anelm::server {
namespace {

std::string feed(StopText& s, const std::vector<std::string>& pieces) {
    std::string out;
    for (const std::string& p : pieces) out += s.push(p);
    return out;
}

TEST(StopText, FindsAStopSplitAcrossPieces) {
    StopText s({"</end>"});
    EXPECT_EQ(s.push("Hello </"), "Hello ");  // "</" might begin the stop string
    EXPECT_EQ(s.push("en"), "");
    EXPECT_FALSE(s.stopped());
    EXPECT_EQ(s.push("d> and more"), "");
    EXPECT_TRUE(s.stopped());
    EXPECT_EQ(s.push("later"), "");
    EXPECT_EQ(s.flush(), "");
}

TEST(StopText, ReleasesWhatTurnsOutNotToBeAStop) {
    StopText s({"STOP"});
    EXPECT_EQ(s.push("a ST"), "a ");
    EXPECT_EQ(s.push("ART"), "START");
    EXPECT_EQ(s.push("S"), "");
    EXPECT_EQ(s.flush(), "S");
    EXPECT_FALSE(s.stopped());
}

TEST(StopText, TheEarliestOfSeveralStopsWins) {
    StopText s({"world", "lo w", "\n\n"});
    EXPECT_EQ(feed(s, {"hel", "lo", " wor", "ld"}), "hel");
    EXPECT_TRUE(s.stopped());
}

TEST(StopText, NamesTheStopThatMatched) {
    StopText s({"world", "lo w", "\n\n"});
    EXPECT_EQ(s.matched(), "");
    feed(s, {"hel", "lo", " wor", "ld"});
    EXPECT_EQ(s.matched(), "lo w");
}

TEST(StopText, AStopInsideOnePieceCutsIt) {
    StopText s({"\n\n"});
    EXPECT_EQ(s.push("line one\n\nline two"), "line one");
    EXPECT_TRUE(s.stopped());
}

TEST(StopText, HoldsBackOnlyAPossibleStart) {
    StopText s({"abcab"});
    // "abca" could still become "abcab"; then "abcaX" cannot, nor can any tail.
    EXPECT_EQ(s.push("xxabca"), "xx");
    EXPECT_EQ(s.push("X"), "abcaX");
    // The first occurrence ends the text, although it overlaps a second.
    EXPECT_EQ(s.push("zabcabcab"), "z");
    EXPECT_TRUE(s.stopped());
}

TEST(StopText, WithoutStopsEverythingPassesAtOnce) {
    StopText s({});
    EXPECT_EQ(s.push("héllo"), "héllo");
    EXPECT_EQ(s.flush(), "");
}

}  // namespace
}  // namespace anelm::server

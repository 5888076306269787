#include "io/weight_store.h"

#include <gtest/gtest.h>

#include "io/io_test_util.h"

namespace anelm {
namespace {

using test::expect_error;

TEST(WeightStore, FindsTensorsAndChecksShapes) {
    const float data[6] = {};
    WeightStore store;
    store.set_origin("model/");
    store.add("b.weight", TensorView{DType::f32, {2, 3}, reinterpret_cast<const std::byte*>(data)},
              "model/a.safetensors");
    store.add("a.weight", TensorView{DType::f16, {4}, reinterpret_cast<const std::byte*>(data)},
              "model/b.safetensors");
    EXPECT_EQ(store.size(), 2u);
    EXPECT_EQ(store.names(), (std::vector<std::string>{"a.weight", "b.weight"}));
    EXPECT_EQ(store.total_bytes(), 6u * 4 + 4u * 2);
    ASSERT_NE(store.find("a.weight"), nullptr);
    EXPECT_EQ(store.find("a.weight")->dtype, DType::f16);
    EXPECT_EQ(store.find("c.weight"), nullptr);
    EXPECT_EQ(store.get("b.weight", {2, 3}).numel(), 6);

    expect_error([&] { store.get("c.weight"); }, {"model/: missing tensor c.weight"});
    expect_error(
        [&] {
            store.get("b.weight", {3, 2});
        },
        {"model/a.safetensors: tensor b.weight has shape [2, 3], expected [3, 2]"});
    expect_error(
        [&] { store.add("a.weight", TensorView{}, "model/c.safetensors"); },
        {"model/c.safetensors: tensor a.weight is defined twice (also in model/b.safetensors)"});
}

TEST(WeightStore, KeepsOwnersAlive) {
    auto owner = std::make_shared<std::vector<float>>(4, 1.0f);
    std::weak_ptr<std::vector<float>> watch = owner;
    {
        WeightStore store;
        store.keep_alive(owner);
        owner.reset();
        EXPECT_FALSE(watch.expired());
        WeightStore moved = std::move(store);
        EXPECT_FALSE(watch.expired());
    }
    EXPECT_TRUE(watch.expired());
}

}  // namespace
}  // namespace anelm

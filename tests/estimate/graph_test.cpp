#include "estimate/graph.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "estimate/builder.hpp"

namespace truepeak::estimate {
namespace {

TEST(Dim, ParsesPrintsAndEvaluatesProducts) {
  const Dim d = Dim::parse("12*N*S");
  EXPECT_EQ(d.coeff, 12);
  EXPECT_EQ(d.symbols, (std::vector<std::string>{"N", "S"}));
  EXPECT_EQ(d.str(), "12*N*S");
  EXPECT_EQ(d.eval({{"N", 2}, {"S", 10}}), 240);
  EXPECT_EQ(Dim::parse("S*N*4"), Dim::parse("4*N*S"));
  EXPECT_EQ(Dim::parse("768").eval({}), 768);
}

TEST(Dim, RejectsBadTextAndUnboundSymbols) {
  EXPECT_THROW(Dim::parse(""), InputError);
  EXPECT_THROW(Dim::parse("N**S"), InputError);
  EXPECT_THROW(Dim::parse("3x"), InputError);
  EXPECT_THROW(Dim::parse("N").eval({{"S", 1}}), InputError);
}

TEST(Builder, ConvOutputShapeAndWeights) {
  GraphBuilder b;
  const auto& x = b.input("x", {Dim::symbol("N"), 64, 56, 56});
  const Op op = make_conv2d("c", x, 128, {3, 3, 2, 1, 1, 1}, false);
  EXPECT_EQ(shape_str(op.output.shape), "[N,128,28,28]");
  ASSERT_EQ(op.weights.size(), 1u);
  EXPECT_EQ(shape_str(op.weights[0].shape), "[128,64,3,3]");
  const Op dw = make_conv2d("dw", x, 64, {3, 3, 1, 1, 1, 64}, true);
  EXPECT_EQ(shape_str(dw.weights[0].shape), "[64,1,3,3]");
  EXPECT_THROW(make_conv2d("bad", x, 100, {3, 3, 1, 1, 1, 3}, false), InputError);
}

TEST(Builder, SharedWeightNamesAreCountedOnce) {
  GraphBuilder b;
  const auto& ids = b.input("ids", {Dim::symbol("N"), Dim::symbol("S")});
  const auto& e = b.add(make_embedding("embed", ids, 1000, 64, "table"));
  b.add(make_linear("head", e, 1000, false, "table"));  // tied: same [1000, 64] elements
  const Graph g = b.take();
  EXPECT_DOUBLE_EQ(count_params(g, {{"N", 1}, {"S", 1}}), 1000.0 * 64);
}

}  // namespace
}  // namespace truepeak::estimate

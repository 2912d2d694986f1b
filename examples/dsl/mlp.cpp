//===- mlp.cpp - a small MLP classifier written with the zbc DSL ----------===//
//
// The same model as examples/mlp.mlir: four linear layers with biases and
// ReLUs, cut into two pipeline stages, and a softmax cross-entropy loss.
//
//===----------------------------------------------------------------------===//

#include "zbc/DSL/Model.h"

#include <string>

using namespace zbc::dsl;

int main(int argc, char **argv) {
  const int64_t batch = 8, features = 16, hidden = 64, classes = 8;
  Model m("mlp");
  Tensor x = m.input("x", {batch, features});
  Tensor y = m.label("y", {batch}, DType::I64);

  int64_t in = features;
  for (int layer = 0; layer < 4; ++layer) {
    std::string p = "fc" + std::to_string(layer) + ".";
    int64_t out = layer == 3 ? classes : hidden;
    Tensor w = m.param(p + "weight", {in, out}, Init::normal(0.1));
    Tensor b = m.param(p + "bias", {out}, Init::zeros());
    x = m.biasAdd(m.linear(x, w), b);
    if (layer < 3)
      x = m.relu(x);
    if (layer == 1)
      x = m.cut(x); // stage 0: fc0, fc1; stage 1: fc2, fc3
    in = out;
  }
  m.loss(m.crossEntropy(x, y));
  return m.emit(argc, argv);
}

// Finite-difference gradient checks for every layer and loss (layer_testing.hpp explains the
// method and its tolerance), including stride/padding/dilation/groups edge cases, batch size 1,
// batch norm in training mode and residual blocks with and without projection.
#include "layer_testing.hpp"

namespace nn = cohort::nn;
using cohort::Shape;
using lt::check_loss;
using lt::check_module;

TEST_SUITE("fd") {

TEST_CASE("Linear") {
  nn::manual_seed(1);
  SUBCASE("bias") {
    nn::Linear m(7, 5, lt::host());
    check_module(m, lt::uniform({4, 7}, -1, 1, 10));
  }
  SUBCASE("no bias") {
    nn::Linear m(6, 3, lt::host(), false);
    check_module(m, lt::uniform({3, 6}, -1, 1, 11));
  }
  SUBCASE("batch size 1") {
    nn::Linear m(5, 4, lt::host());
    check_module(m, lt::uniform({1, 5}, -1, 1, 12));
  }
  SUBCASE("3-D input") {
    nn::Linear m(4, 6, lt::host());
    check_module(m, lt::uniform({2, 3, 4}, -1, 1, 13));
  }
}

TEST_CASE("Conv2d") {
  nn::manual_seed(2);
  struct Case {
    std::string name;
    nn::Conv2dOptions o;
    Shape x;
  };
  const Case cases[] = {
      {"3x3", nn::Conv2dOptions(3, 4, 3), {2, 3, 6, 6}},
      {"stride 2 padding 1", nn::Conv2dOptions(3, 4, 3).stride(2).padding(1), {2, 3, 7, 7}},
      {"dilation 2 padding 2", nn::Conv2dOptions(2, 3, 3).dilation(2).padding(2), {2, 2, 7, 6}},
      {"groups 2", nn::Conv2dOptions(4, 6, 3).padding(1).groups(2), {2, 4, 5, 5}},
      {"depthwise stride 2",
       nn::Conv2dOptions(4, 4, 3).stride(2).padding(1).groups(4),
       {2, 4, 6, 6}},
      {"no bias 2x2", nn::Conv2dOptions(3, 2, 2).bias(false), {2, 3, 5, 4}},
      {"1x1 (no im2col)", nn::Conv2dOptions(5, 3, 1), {2, 5, 4, 3}},
      {"1x1 stride 2", nn::Conv2dOptions(4, 6, 1).stride(2), {2, 4, 5, 5}},
      {"rectangular 2x3 stride (2,1) padding (1,0)",
       nn::Conv2dOptions(2, 3, 2, 3).stride(2, 1).padding(1, 0),
       {2, 2, 5, 6}},
      {"batch size 1", nn::Conv2dOptions(2, 3, 3).padding(1), {1, 2, 4, 5}},
      {"padding 2 stride 3 (windows mostly padding)",
       nn::Conv2dOptions(1, 2, 3).padding(2).stride(3),
       {2, 1, 4, 4}},
      {"groups 2 dilation 2 stride 2",
       nn::Conv2dOptions(4, 2, 3).groups(2).dilation(2).stride(2).padding(1),
       {1, 4, 7, 7}},
  };
  for (const auto& c : cases) {
    CAPTURE(c.name);
    nn::Conv2d m(c.o, lt::host());
    check_module(m, lt::uniform(c.x, -1, 1, 20));
  }
}

TEST_CASE("activations") {
  const Shape s{3, 4, 5};
  SUBCASE("ReLU") {
    nn::ReLU m;
    check_module(m, lt::away_from_zero(s, 0.05f, 30));
  }
  SUBCASE("LeakyReLU") {
    nn::LeakyReLU m(0.1f);
    check_module(m, lt::away_from_zero(s, 0.05f, 31));
  }
  SUBCASE("GELU") {
    nn::GELU m;
    check_module(m, lt::uniform(s, -3, 3, 32));
  }
  SUBCASE("Sigmoid") {
    nn::Sigmoid m;
    check_module(m, lt::uniform(s, -4, 4, 33));
  }
  SUBCASE("Tanh") {
    nn::Tanh m;
    check_module(m, lt::uniform(s, -2, 2, 34));
  }
}

TEST_CASE("pooling") {
  SUBCASE("MaxPool2d 2x2") {
    nn::MaxPool2d m(nn::MaxPool2dOptions(2));
    check_module(m, lt::distinct({2, 3, 6, 6}, 40));
  }
  SUBCASE("MaxPool2d 3x3 stride 2 padding 1") {
    nn::MaxPool2d m(nn::MaxPool2dOptions(3).stride(2).padding(1));
    check_module(m, lt::distinct({2, 3, 7, 7}, 41));
  }
  SUBCASE("MaxPool2d dilation 2, overlapping") {
    nn::MaxPool2d m(nn::MaxPool2dOptions(2).stride(1).padding(1).dilation(2));
    check_module(m, lt::distinct({2, 2, 5, 5}, 42));
  }
  SUBCASE("MaxPool2d batch 1, rectangular") {
    nn::MaxPool2d m(nn::MaxPool2dOptions(2, 3).stride(1, 2));
    check_module(m, lt::distinct({1, 2, 5, 7}, 43));
  }
  SUBCASE("AvgPool2d 2x2") {
    nn::AvgPool2d m(nn::AvgPool2dOptions(2));
    check_module(m, lt::uniform({2, 3, 6, 6}, -1, 1, 44));
  }
  SUBCASE("AvgPool2d 3x3 stride 2 padding 1, count_include_pad") {
    nn::AvgPool2d m(nn::AvgPool2dOptions(3).stride(2).padding(1));
    check_module(m, lt::uniform({2, 3, 7, 7}, -1, 1, 45));
  }
  SUBCASE("AvgPool2d 3x3 stride 2 padding 1, !count_include_pad") {
    nn::AvgPool2d m(nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
    check_module(m, lt::uniform({2, 3, 7, 7}, -1, 1, 46));
  }
  SUBCASE("AdaptiveAvgPool2d(1)") {
    nn::AdaptiveAvgPool2d m(1);
    check_module(m, lt::uniform({2, 5, 4, 3}, -1, 1, 47));
  }
  SUBCASE("AdaptiveAvgPool2d(2)") {
    nn::AdaptiveAvgPool2d m(2);
    check_module(m, lt::uniform({1, 3, 6, 4}, -1, 1, 48));
  }
}

TEST_CASE("BatchNorm2d") {
  SUBCASE("training") {
    nn::BatchNorm2d m(4, lt::host());
    m.weight()->value.copy_from(lt::uniform({4}, 0.5f, 1.5f, 50));
    m.bias()->value.copy_from(lt::uniform({4}, -0.5f, 0.5f, 51));
    check_module(m, lt::uniform({3, 4, 3, 5}, -2, 2, 52));
  }
  SUBCASE("training, batch size 1") {
    nn::BatchNorm2d m(3, lt::host());
    m.weight()->value.copy_from(lt::uniform({3}, 0.5f, 1.5f, 53));
    check_module(m, lt::uniform({1, 3, 4, 4}, -2, 2, 54));
  }
  SUBCASE("training, no affine") {
    nn::BatchNorm2d m(3, lt::host(), {1e-3f, 0.1f, false, true});
    check_module(m, lt::uniform({2, 3, 3, 3}, -2, 2, 55));
  }
  SUBCASE("evaluation (running statistics)") {
    nn::BatchNorm2d m(4, lt::host());
    m.weight()->value.copy_from(lt::uniform({4}, 0.5f, 1.5f, 56));
    m.bias()->value.copy_from(lt::uniform({4}, -0.5f, 0.5f, 57));
    for (auto& b : m.named_buffers())
      if (b.name == "running_var") b.tensor.copy_from(lt::uniform({4}, 0.5f, 2.0f, 58));
    m.eval();
    check_module(m, lt::uniform({3, 4, 2, 2}, -2, 2, 59));
  }
}

TEST_CASE("LayerNorm") {
  SUBCASE("last dimension") {
    nn::LayerNorm m({6}, lt::host());
    m.weight()->value.copy_from(lt::uniform({6}, 0.5f, 1.5f, 60));
    m.bias()->value.copy_from(lt::uniform({6}, -1, 1, 61));
    check_module(m, lt::uniform({3, 4, 6}, -2, 2, 62));
  }
  SUBCASE("last two dimensions") {
    nn::LayerNorm m({3, 4}, lt::host());
    m.weight()->value.copy_from(lt::uniform({3, 4}, 0.5f, 1.5f, 63));
    check_module(m, lt::uniform({2, 3, 4}, -2, 2, 64));
  }
  SUBCASE("no affine") {
    nn::LayerNorm m({5}, lt::host(), 1e-3f, false);
    check_module(m, lt::uniform({4, 5}, -2, 2, 65));
  }
}

TEST_CASE("Dropout, Flatten, Softmax, LogSoftmax") {
  SUBCASE("Dropout training (step held fixed)") {
    nn::Dropout m(0.3f);
    check_module(m, lt::uniform({4, 9}, -1, 1, 70), {}, [&] { m.set_step(5); });
  }
  SUBCASE("Dropout evaluation") {
    nn::Dropout m(0.3f);
    m.eval();
    check_module(m, lt::uniform({4, 9}, -1, 1, 71));
  }
  SUBCASE("Flatten") {
    nn::Flatten m;
    check_module(m, lt::uniform({2, 3, 2, 2}, -1, 1, 72));
  }
  SUBCASE("Softmax dim 1") {
    nn::Softmax m(1);
    check_module(m, lt::uniform({4, 7}, -2, 2, 73));
  }
  SUBCASE("LogSoftmax dim 1") {
    nn::LogSoftmax m(1);
    check_module(m, lt::uniform({4, 7}, -2, 2, 74));
  }
  SUBCASE("Softmax over the channels of NCHW") {
    nn::Softmax m(1);
    check_module(m, lt::uniform({2, 3, 2, 2}, -2, 2, 75));
  }
  SUBCASE("LogSoftmax dim -1 of 3-D") {
    nn::LogSoftmax m(-1);
    check_module(m, lt::uniform({2, 3, 5}, -2, 2, 76));
  }
}

TEST_CASE("containers") {
  nn::manual_seed(3);
  SUBCASE("Sequential conv-bn-tanh-avgpool-flatten-linear (conv+tanh fused)") {
    nn::Sequential m{nn::make<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3).padding(1), lt::host()),
                     nn::make<nn::BatchNorm2d>(4, lt::host()), nn::make<nn::Tanh>(),
                     nn::make<nn::Conv2d>(nn::Conv2dOptions(4, 4, 3).padding(1), lt::host()),
                     nn::make<nn::Sigmoid>(), nn::make<nn::AvgPool2d>(nn::AvgPool2dOptions(2)),
                     nn::make<nn::Flatten>(), nn::make<nn::Linear>(16, 3, lt::host())};
    check_module(m, lt::uniform({2, 2, 4, 4}, -1, 1, 80));
  }
  SUBCASE("Residual, identity shortcut") {
    auto block = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        nn::make<nn::Conv2d>(nn::Conv2dOptions(3, 3, 3).padding(1).bias(false), lt::host()),
        nn::make<nn::BatchNorm2d>(3, lt::host()), nn::make<nn::Tanh>(),
        nn::make<nn::Conv2d>(nn::Conv2dOptions(3, 3, 3).padding(1).bias(false), lt::host()),
        nn::make<nn::BatchNorm2d>(3, lt::host())});
    nn::Residual m(block);
    check_module(m, lt::uniform({2, 3, 4, 4}, -1, 1, 81));
  }
  SUBCASE("Residual, projection shortcut (stride 2, 1x1 conv + bn)") {
    auto block = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        nn::make<nn::Conv2d>(nn::Conv2dOptions(2, 4, 3).stride(2).padding(1).bias(false),
                             lt::host()),
        nn::make<nn::BatchNorm2d>(4, lt::host()), nn::make<nn::GELU>(),
        nn::make<nn::Conv2d>(nn::Conv2dOptions(4, 4, 3).padding(1).bias(false), lt::host()),
        nn::make<nn::BatchNorm2d>(4, lt::host())});
    auto proj = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        nn::make<nn::Conv2d>(nn::Conv2dOptions(2, 4, 1).stride(2).bias(false), lt::host()),
        nn::make<nn::BatchNorm2d>(4, lt::host())});
    nn::Residual m(block, proj);
    check_module(m, lt::uniform({2, 2, 6, 6}, -1, 1, 82));
  }
}

TEST_CASE("losses") {
  for (auto red : {nn::Reduction::mean, nn::Reduction::sum}) {
    CAPTURE(red == nn::Reduction::mean ? "mean" : "sum");
    nn::CrossEntropyLoss ce(red);
    check_loss(ce, lt::uniform({5, 7}, -2, 2, 90), lt::labels(5, 7, 91));
    nn::NLLLoss nll(red);
    check_loss(nll, lt::uniform({5, 7}, -3, 0, 92), lt::labels(5, 7, 93));
    nn::MSELoss mse(red);
    check_loss(mse, lt::uniform({3, 4, 2}, -1, 1, 94), lt::uniform({3, 4, 2}, -1, 1, 95));
  }
  SUBCASE("batch size 1") {
    nn::CrossEntropyLoss ce;
    check_loss(ce, lt::uniform({1, 10}, -2, 2, 96), lt::labels(1, 10, 97));
  }
}

}  // TEST_SUITE

// The Module API: PyTorch state_dict names, parameters and buffers, gradient accumulation and
// zero_grad, train/eval, the grad-ready hook, initialisation, dropout determinism, Conv2d+ReLU
// fusion, summary() and load_state_dict.
#include <map>

#include "layer_testing.hpp"

namespace nn = cohort::nn;
using cohort::DType;
using cohort::Shape;
using cohort::Tensor;

namespace {

std::vector<std::string> names_of(const std::vector<cohort::NamedParameter>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}
std::vector<std::string> names_of(const std::vector<nn::NamedTensor>& v) {
  std::vector<std::string> out;
  for (const auto& x : v) out.push_back(x.name);
  return out;
}

// A small ResNet-style model: stem, one residual block with projection, head.
std::shared_ptr<nn::Sequential> tiny_resnet() {
  cohort::Device& d = lt::host();
  auto block = nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"conv1",
       nn::make<nn::Conv2d>(nn::Conv2dOptions(4, 8, 3).stride(2).padding(1).bias(false), d)},
      {"bn1", nn::make<nn::BatchNorm2d>(8, d)},
      {"relu", nn::make<nn::ReLU>()},
      {"conv2", nn::make<nn::Conv2d>(nn::Conv2dOptions(8, 8, 3).padding(1).bias(false), d)},
      {"bn2", nn::make<nn::BatchNorm2d>(8, d)}});
  auto down = nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
      nn::make<nn::Conv2d>(nn::Conv2dOptions(4, 8, 1).stride(2).bias(false), d),
      nn::make<nn::BatchNorm2d>(8, d)});
  return nn::make<nn::Sequential>(std::vector<std::pair<std::string, nn::ModulePtr>>{
      {"stem", nn::make<nn::Conv2d>(nn::Conv2dOptions(3, 4, 3).padding(1), d)},
      {"layer1", nn::make<nn::Residual>(block, down)},
      {"relu", nn::make<nn::ReLU>()},
      {"pool", nn::make<nn::AdaptiveAvgPool2d>(1)},
      {"flatten", nn::make<nn::Flatten>()},
      {"fc", nn::make<nn::Linear>(8, 5, d)}});
}

}  // namespace

TEST_SUITE("module") {

TEST_CASE("state_dict names are PyTorch's") {
  auto net = tiny_resnet();
  CHECK(names_of(net->named_parameters()) ==
        std::vector<std::string>{"stem.weight", "stem.bias", "layer1.block.conv1.weight",
                                 "layer1.block.bn1.weight", "layer1.block.bn1.bias",
                                 "layer1.block.conv2.weight", "layer1.block.bn2.weight",
                                 "layer1.block.bn2.bias", "layer1.shortcut.0.weight",
                                 "layer1.shortcut.1.weight", "layer1.shortcut.1.bias", "fc.weight",
                                 "fc.bias"});
  CHECK(names_of(net->named_buffers()) ==
        std::vector<std::string>{
            "layer1.block.bn1.running_mean", "layer1.block.bn1.running_var",
            "layer1.block.bn1.num_batches_tracked", "layer1.block.bn2.running_mean",
            "layer1.block.bn2.running_var", "layer1.block.bn2.num_batches_tracked",
            "layer1.shortcut.1.running_mean", "layer1.shortcut.1.running_var",
            "layer1.shortcut.1.num_batches_tracked"});
  const auto sd = net->state_dict();
  CHECK(sd.size() == 13 + 9);
  CHECK(sd[2].name == "layer1.block.conv1.weight");
  CHECK(sd[3].name == "layer1.block.bn1.weight");
  CHECK(sd[5].name == "layer1.block.bn1.running_mean");  // per module: parameters, then buffers
  for (const auto& e : sd)
    if (e.name.find("num_batches_tracked") != std::string::npos) {
      CHECK(e.tensor.dtype() == DType::i64);
      CHECK(e.tensor.shape() == Shape{});
    }
  // Shapes as PyTorch: conv OIHW, linear [out, in].
  CHECK(net->named_parameters()[2].param->value.shape() == Shape{8, 4, 3, 3});
  CHECK(net->named_parameters()[11].param->value.shape() == Shape{5, 8});
  CHECK(net->num_parameters() == 4 * 27 + 4 + 8 * 36 + 16 + 8 * 72 + 16 + 32 + 16 + 40 + 5);
}

TEST_CASE("nn::sequential: named pairs and plain lists without spelling out the list type") {
  auto& dev = lt::host();
  auto named = nn::sequential({{"flatten", nn::make<nn::Flatten>()},
                               {"fc1", nn::make<nn::Linear>(4, 3, dev)},
                               {"relu", nn::make<nn::ReLU>()},
                               {"fc2", nn::make<nn::Linear>(3, 2, dev, /*bias=*/false)}});
  CHECK(names_of(named->state_dict()) ==
        std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight"});
  auto plain = nn::sequential({nn::make<nn::Flatten>(), nn::make<nn::Linear>(4, 3, dev)});
  CHECK(names_of(plain->state_dict()) == std::vector<std::string>{"1.weight", "1.bias"});
  nn::Sequential direct{{"a", nn::make<nn::ReLU>()}, {"b", nn::make<nn::Linear>(2, 2, dev)}};
  CHECK(names_of(direct.state_dict()) == std::vector<std::string>{"b.weight", "b.bias"});
  CHECK(named->output_shape({5, 1, 2, 2}) == Shape{5, 2});
  CHECK(lt::error_of([&] {
          nn::sequential({{"x", nn::make<nn::ReLU>()}, {"x", nn::make<nn::ReLU>()}});
        }).find("x") != std::string::npos);
}

TEST_CASE("gradients accumulate until zero_grad") {
  nn::manual_seed(4);
  nn::Linear fc(3, 2, lt::host());
  const Tensor x = lt::uniform({4, 3}, -1, 1, 1), g = lt::uniform({4, 2}, -1, 1, 2);
  fc.forward(x);
  fc.backward(g);
  const auto once = fc.weight()->grad.to_vector<float>();
  fc.forward(x);
  fc.backward(g);
  const auto twice = fc.weight()->grad.to_vector<float>();
  for (std::size_t i = 0; i < once.size(); ++i) CHECK(twice[i] == doctest::Approx(2 * once[i]));
  fc.zero_grad();
  for (float v : fc.weight()->grad.to_vector<float>()) CHECK(v == 0.0f);
  for (float v : fc.bias()->grad.to_vector<float>()) CHECK(v == 0.0f);
}

TEST_CASE("frozen parameters get no gradient and no hook") {
  nn::Linear fc(3, 2, lt::host());
  fc.weight()->requires_grad = false;
  std::vector<std::string> seen;
  fc.register_grad_ready_hook([&](const cohort::NamedParameter& p) { seen.push_back(p.name); });
  fc.forward(lt::uniform({4, 3}, -1, 1, 1));
  fc.backward(lt::uniform({4, 2}, -1, 1, 2));
  CHECK(seen == std::vector<std::string>{"bias"});
  for (float v : fc.weight()->grad.to_vector<float>()) CHECK(v == 0.0f);
}

TEST_CASE("grad-ready hook: once per parameter, reverse order, gradient final") {
  nn::manual_seed(6);
  auto net = tiny_resnet();
  std::vector<std::string> seen;
  std::map<std::string, std::vector<float>> at_hook;
  net->register_grad_ready_hook([&](const cohort::NamedParameter& p) {
    seen.push_back(p.name);
    at_hook[p.name] = p.param->grad.to_vector<float>();
  });
  net->zero_grad();
  const Tensor y = net->forward(lt::uniform({2, 3, 8, 8}, -1, 1, 1));
  net->backward(lt::uniform(y.shape(), -1, 1, 2), /*need_input_grad=*/false);
  std::vector<std::string> want = names_of(net->named_parameters());
  std::reverse(want.begin(), want.end());
  CHECK(seen == want);
  for (const auto& np : net->named_parameters())
    CHECK_MESSAGE(at_hook[np.name] == np.param->grad.to_vector<float>(),
                  np.name << " changed after its hook fired");
  // A second backward pass fires every hook again, once.
  seen.clear();
  net->forward(lt::uniform({2, 3, 8, 8}, -1, 1, 3));
  net->backward(lt::uniform(y.shape(), -1, 1, 4));
  CHECK(seen.size() == want.size());
  // Registered on a sub-module, names are relative to it; clear removes every hook.
  std::vector<std::string> sub;
  net->children()[1].second->register_grad_ready_hook(
      [&](const cohort::NamedParameter& p) { sub.push_back(p.name); });
  seen.clear();
  net->forward(lt::uniform({2, 3, 8, 8}, -1, 1, 3));
  net->backward(lt::uniform(y.shape(), -1, 1, 4));
  CHECK(sub.front() == "shortcut.1.bias");
  CHECK(sub.back() == "block.conv1.weight");
  net->clear_grad_ready_hooks();
  seen.clear();
  sub.clear();
  net->forward(lt::uniform({2, 3, 8, 8}, -1, 1, 3));
  net->backward(lt::uniform(y.shape(), -1, 1, 4));
  CHECK(seen.empty());
  CHECK(sub.empty());
}

TEST_CASE("hooks reach children added after registration") {
  nn::Sequential net;
  std::vector<std::string> seen;
  net.register_grad_ready_hook([&](const cohort::NamedParameter& p) { seen.push_back(p.name); });
  net.add("fc", nn::make<nn::Linear>(3, 2, lt::host()));
  net.forward(lt::uniform({1, 3}, -1, 1, 1));
  net.backward(lt::uniform({1, 2}, -1, 1, 2));
  CHECK(seen == std::vector<std::string>{"fc.bias", "fc.weight"});
}

TEST_CASE("train and eval propagate; batch norm modes and counters") {
  auto net = tiny_resnet();
  net->eval();
  for (const auto& [n, c] : net->children()) CHECK_FALSE(c->is_training());
  net->train();
  auto& bn = *std::dynamic_pointer_cast<nn::BatchNorm2d>(
      std::dynamic_pointer_cast<nn::Sequential>(
          std::dynamic_pointer_cast<nn::Residual>(net->children()[1].second)->block())
          ->children()[1]
          .second);
  CHECK(bn.is_training());
  const Tensor x = lt::uniform({2, 3, 8, 8}, -1, 1, 1);
  net->forward(x);
  net->forward(x);
  auto counter = [&] {
    for (const auto& b : bn.named_buffers())
      if (b.name == "num_batches_tracked") return b.tensor.to_vector<std::int64_t>()[0];
    return std::int64_t{-1};
  };
  CHECK(counter() == 2);
  net->eval();
  const auto y1 = net->forward(x).to_vector<float>();
  const auto y2 = net->forward(x).to_vector<float>();
  CHECK(y1 == y2);      // evaluation: running statistics, deterministic
  CHECK(counter() == 2);  // and no update
}

TEST_CASE("initialisation: PyTorch's bounds, reproducible from manual_seed") {
  nn::manual_seed(123);
  nn::Conv2d a(nn::Conv2dOptions(32, 64, 3), lt::host());
  nn::Linear l(9216, 128, lt::host());
  nn::manual_seed(123);
  nn::Conv2d b(nn::Conv2dOptions(32, 64, 3), lt::host());
  nn::manual_seed(124);
  nn::Conv2d c(nn::Conv2dOptions(32, 64, 3), lt::host());
  const auto wa = a.weight()->value.to_vector<float>();
  CHECK(wa == b.weight()->value.to_vector<float>());
  CHECK(wa != c.weight()->value.to_vector<float>());
  CHECK(a.bias()->value.to_vector<float>() == b.bias()->value.to_vector<float>());
  CHECK(wa != a.bias()->value.to_vector<float>());  // the stream advances between tensors
  // Kaiming uniform, a = sqrt(5): U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = 32 * 9.
  const double bound = 1.0 / std::sqrt(288.0);
  double sum = 0, sq = 0, mx = 0;
  for (float v : wa) {
    sum += v;
    sq += static_cast<double>(v) * v;
    mx = std::max(mx, std::fabs(static_cast<double>(v)));
  }
  const double n = static_cast<double>(wa.size());
  CHECK(mx <= bound);
  CHECK(mx > 0.99 * bound);
  CHECK(std::fabs(sum / n) < 0.01 * bound);
  CHECK(std::sqrt(sq / n) == doctest::Approx(bound / std::sqrt(3.0)).epsilon(0.02));
  for (float v : l.bias()->value.to_vector<float>()) CHECK(std::fabs(v) <= 1.0 / std::sqrt(9216.0));
}

TEST_CASE("Dropout: deterministic masks from (seed, step)") {
  const Tensor x = Tensor::full({1000, 10}, 1.0, DType::f32, lt::host());
  nn::Dropout d(0.25f);
  d.set_seed(42);
  const auto y0 = d.forward(x).to_vector<float>();
  CHECK(d.step() == 1);
  const auto y1 = d.forward(x).to_vector<float>();
  CHECK(y0 != y1);  // a new mask per step
  d.set_step(0);
  CHECK(d.forward(x).to_vector<float>() == y0);  // the same (seed, step), the same mask
  std::size_t kept = 0;
  for (float v : y0) {
    CHECK((v == 0.0f || v == 1.0f / 0.75f));
    kept += v != 0.0f;
  }
  CHECK(static_cast<double>(kept) / 10000.0 == doctest::Approx(0.75).epsilon(0.03));
  // Backward applies the forward's mask.
  const auto g =
      d.backward(Tensor::full({1000, 10}, 2.0, DType::f32, lt::host())).to_vector<float>();
  for (std::size_t i = 0; i < g.size(); ++i) CHECK(g[i] == (y0[i] != 0.0f ? 2.0f / 0.75f : 0.0f));
  // Two layers built after the same manual_seed draw the same seeds; consecutive layers differ.
  nn::manual_seed(9);
  nn::Dropout e(0.5f), f(0.5f);
  nn::manual_seed(9);
  nn::Dropout e2(0.5f);
  CHECK(e.seed() == e2.seed());
  CHECK(e.seed() != f.seed());
  // Evaluation: identity, the very same tensor; p = 0: identity in training too.
  d.eval();
  const Tensor same = d.forward(x);
  CHECK(same.raw() == x.raw());
}

TEST_CASE("Conv2d+ReLU fusion gives the unfused results") {
  auto build = [] {
    nn::manual_seed(11);
    return nn::make<nn::Sequential>(std::initializer_list<nn::ModulePtr>{
        nn::make<nn::Conv2d>(nn::Conv2dOptions(3, 5, 3).padding(1), lt::host()),
        nn::make<nn::ReLU>(),
        nn::make<nn::Conv2d>(nn::Conv2dOptions(5, 4, 3).stride(2), lt::host()),
        nn::make<nn::Tanh>(), nn::make<nn::Flatten>()});
  };
  auto fused = build(), plain = build();
  plain->set_fusion(false);
  const Tensor x = lt::uniform({2, 3, 9, 9}, -1, 1, 1);
  const Tensor yf = fused->forward(x), yp = plain->forward(x);
  CHECK(yf.to_vector<float>() == yp.to_vector<float>());
  const Tensor g = lt::uniform(yf.shape(), -1, 1, 2);
  CHECK(fused->backward(g).to_vector<float>() == plain->backward(g).to_vector<float>());
  const auto pf = fused->parameters(), pp = plain->parameters();
  for (std::size_t i = 0; i < pf.size(); ++i)
    CHECK(pf[i]->grad.to_vector<float>() == pp[i]->grad.to_vector<float>());
}

TEST_CASE("summary: layers, output shapes, parameter counts") {
  nn::manual_seed(1);
  auto net = tiny_resnet();
  const std::string want =
      "Layer (type)                         Output shape  Param #\n"
      "==========================================================\n"
      "stem (Conv2d)                        [2, 4, 8, 8]      112\n"
      "layer1 (Residual)                    [2, 8, 4, 4]      944\n"
      "  layer1.block (Sequential)          [2, 8, 4, 4]      896\n"
      "    layer1.block.conv1 (Conv2d)      [2, 8, 4, 4]      288\n"
      "    layer1.block.bn1 (BatchNorm2d)   [2, 8, 4, 4]       16\n"
      "    layer1.block.relu (ReLU)         [2, 8, 4, 4]        0\n"
      "    layer1.block.conv2 (Conv2d)      [2, 8, 4, 4]      576\n"
      "    layer1.block.bn2 (BatchNorm2d)   [2, 8, 4, 4]       16\n"
      "  layer1.shortcut (Sequential)       [2, 8, 4, 4]       48\n"
      "    layer1.shortcut.0 (Conv2d)       [2, 8, 4, 4]       32\n"
      "    layer1.shortcut.1 (BatchNorm2d)  [2, 8, 4, 4]       16\n"
      "relu (ReLU)                          [2, 8, 4, 4]        0\n"
      "pool (AdaptiveAvgPool2d)             [2, 8, 1, 1]        0\n"
      "flatten (Flatten)                    [2, 8]              0\n"
      "fc (Linear)                          [2, 5]             45\n"
      "==========================================================\n"
      "Input: [2, 3, 8, 8]\n"
      "Total params: 1,101\n"
      "Trainable params: 1,101\n"
      "Non-trainable params: 0\n";
  CHECK(net->summary(Shape{2, 3, 8, 8}) == want);
  // Frozen parameters count as non-trainable; a leaf module summarises itself.
  net->named_parameters()[0].param->requires_grad = false;
  CHECK(net->summary(Shape{2, 3, 8, 8}).find("Trainable params: 993\nNon-trainable params: 108") !=
        std::string::npos);
  nn::Linear fc(4, 3, lt::host());
  CHECK(fc.summary(Shape{7, 4}) ==
        "Layer (type)  Output shape  Param #\n"
        "===================================\n"
        "(Linear)      [7, 3]             15\n"
        "===================================\n"
        "Input: [7, 4]\n"
        "Total params: 15\n"
        "Trainable params: 15\n"
        "Non-trainable params: 0\n");
}

TEST_CASE("load_state_dict: strict keys and shapes") {
  nn::manual_seed(1);
  auto a = tiny_resnet();
  nn::manual_seed(2);
  auto b = tiny_resnet();
  b->load_state_dict(a->state_dict());
  const auto sa = a->state_dict(), sb = b->state_dict();
  for (std::size_t i = 0; i < sa.size(); ++i) {
    if (sa[i].tensor.dtype() == DType::f32)
      CHECK(sa[i].tensor.to_vector<float>() == sb[i].tensor.to_vector<float>());
  }
  auto missing = a->state_dict();
  missing.pop_back();
  std::string e = lt::error_of([&] { b->load_state_dict(missing); });
  CHECK_MESSAGE(e.find("load_state_dict: missing key 'fc.bias'") !=
                    std::string::npos,
                e);
  CHECK_NOTHROW(b->load_state_dict(missing, /*strict=*/false));
  auto extra = a->state_dict();
  extra.push_back({"head.weight", lt::uniform({2}, 0, 1, 1)});
  e = lt::error_of([&] { b->load_state_dict(extra); });
  CHECK_MESSAGE(e.find("unexpected key 'head.weight'") != std::string::npos, e);
  auto wrong = a->state_dict();
  wrong[0].tensor = lt::uniform({4, 3, 3, 2}, 0, 1, 1);
  e = lt::error_of([&] { b->load_state_dict(wrong); });
  CHECK_MESSAGE(e.find("'stem.weight' is [4, 3, 3, 2] f32, this module holds [4, 3, 3, 3] f32") !=
                    std::string::npos,
                e);
}

TEST_CASE("to(device) keeps values (host to host)") {
  nn::Linear fc(3, 2, lt::host());
  const auto before = fc.weight()->value.to_vector<float>();
  fc.to(lt::host());
  CHECK(fc.weight()->value.to_vector<float>() == before);
  CHECK(&fc.weight()->value.device() == &lt::host());
}

}  // TEST_SUITE

// The vision transformer (see cohort/models/vit.hpp), shaped as torchvision's: the model holds
// class_token, conv_proj, encoder and heads; the encoder holds pos_embedding, dropout, layers and
// ln. Between the modules the data only moves: a permutation turns the patch grid [N, D, h, w]
// into tokens [N, h*w, D], a row copy puts the class token in front of them (broadcast over the
// batch) and another takes token 0 out after the encoder. Backward runs the same moves the other
// way; the class token's gradient is the sum over the batch of token 0's gradient.
#include <cmath>
#include <string>

#include "cohort/core/layer_ops.hpp"
#include "cohort/core/ops.hpp"
#include "cohort/layers.hpp"
#include "cohort/models/vit.hpp"

namespace cohort::models {
namespace {

using i64 = std::int64_t;

// torchvision's Encoder: input + pos_embedding, dropout, the blocks, a final LayerNorm.
class Encoder : public nn::Module {
 public:
  Encoder(i64 seq_length, const ViTConfig& c, Device& dev)
      : Module("Encoder"), seq_len_(seq_length), hidden_dim_(c.hidden_dim) {
    pos_ = register_parameter("pos_embedding", nn::init_normal(Shape{1, seq_len_, hidden_dim_},
                                                               0.0f, 0.02f, dev));  // BERT's
    dropout_ = nn::make<nn::Dropout>(c.dropout);
    layers_ = nn::make<nn::Sequential>();
    for (i64 i = 0; i < c.num_layers; ++i)
      layers_->add("encoder_layer_" + std::to_string(i),
                   nn::make<nn::EncoderBlock>(
                       hidden_dim_, c.num_heads, c.mlp_dim, dev,
                       nn::EncoderBlockOptions().eps(c.layer_norm_eps).dropout(c.dropout)));
    ln_ = nn::make<nn::LayerNorm>(std::vector<i64>{hidden_dim_}, dev, c.layer_norm_eps);
    register_module("dropout", dropout_);
    register_module("layers", layers_);
    register_module("ln", ln_);
  }

 protected:
  Shape output_shape_impl(const Shape& input) const override {
    COHORT_MODULE_CHECK(input.rank() == 3 && input[1] == seq_len_ && input[2] == hidden_dim_,
                        "expected input [N, ", seq_len_, ", ", hidden_dim_, "], got ", input);
    return input;
  }
  Tensor forward_impl(const Tensor& x) override {
    output_shape_impl(x.shape());
    // x + pos_embedding: pos_embedding is a bias over the flattened [T * D] features.
    Tensor y = x.clone();
    Tensor rows = y.reshape({x.dim(0), seq_len_ * hidden_dim_});
    ops::bias_add(pos_->value.reshape({seq_len_ * hidden_dim_}), rows, -1);
    return ln_->forward(layers_->forward(dropout_->forward(y)));
  }
  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override {
    const Tensor g = dropout_->backward(layers_->backward(ln_->backward(grad_output)));
    if (pos_->requires_grad) {
      Tensor dpos = pos_->grad.reshape({seq_len_ * hidden_dim_});
      ops::bias_grad(g.reshape({g.dim(0), seq_len_ * hidden_dim_}), dpos, -1);
      grad_ready(pos_);
    }
    return need_input_grad ? g : Tensor();
  }
  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override {
    Module::summarize(input, depth, rows);
    for (const auto& [name, child] : children()) summarize_child(*child, input, depth + 1, rows);
  }

 private:
  i64 seq_len_, hidden_dim_;
  ParameterPtr pos_;
  nn::ModulePtr dropout_;
  std::shared_ptr<nn::Sequential> layers_;
  std::shared_ptr<nn::LayerNorm> ln_;
};

class VisionTransformer : public nn::Module {
 public:
  VisionTransformer(const ViTConfig& c, Device& dev) : Module("VisionTransformer"), config_(c) {
    COHORT_MODULE_CHECK(c.image_size >= 1 && c.patch_size >= 1 && c.num_layers >= 0 &&
                            c.num_heads >= 1 && c.hidden_dim >= 1 && c.mlp_dim >= 1 &&
                            c.num_classes >= 1 && c.in_channels >= 1,
                        "image_size (", c.image_size, "), patch_size (", c.patch_size,
                        "), num_heads (", c.num_heads, "), hidden_dim (", c.hidden_dim,
                        "), mlp_dim (", c.mlp_dim, "), num_classes (", c.num_classes,
                        ") and in_channels (", c.in_channels,
                        ") must be positive, num_layers (", c.num_layers, ") >= 0");
    COHORT_MODULE_CHECK(c.image_size % c.patch_size == 0, "image_size ", c.image_size,
                        " is not divisible by patch_size ", c.patch_size);
    COHORT_MODULE_CHECK(c.hidden_dim % c.num_heads == 0, "hidden_dim ", c.hidden_dim,
                        " is not divisible by num_heads ", c.num_heads);
    COHORT_MODULE_CHECK(c.dropout >= 0.0f && c.dropout <= 1.0f, "dropout must be in [0, 1], got ",
                        c.dropout);
    grid_ = c.image_size / c.patch_size;
    tokens_ = grid_ * grid_;
    const i64 d = c.hidden_dim;
    class_token_ =
        register_parameter("class_token", Tensor::zeros(Shape{1, 1, d}, DType::f32, dev));
    conv_proj_ = nn::make<nn::Conv2d>(
        nn::Conv2dOptions(c.in_channels, d, c.patch_size).stride(c.patch_size), dev);
    const i64 fan_in = c.in_channels * c.patch_size * c.patch_size;
    conv_proj_->weight()->value.copy_from(nn::init_trunc_normal(
        conv_proj_->weight()->value.shape(), 0.0f,
        static_cast<float>(std::sqrt(1.0 / static_cast<double>(fan_in))), -2.0f, 2.0f, dev));
    ops::fill(conv_proj_->bias()->value, 0.0);
    encoder_ = nn::make<Encoder>(tokens_ + 1, c, dev);
    auto head = nn::make<nn::Linear>(d, c.num_classes, dev);
    ops::fill(head->weight()->value, 0.0);
    ops::fill(head->bias()->value, 0.0);
    heads_ = nn::sequential({{"head", head}});
    register_module("conv_proj", conv_proj_);
    register_module("encoder", encoder_);
    register_module("heads", heads_);
  }

 protected:
  Shape output_shape_impl(const Shape& input) const override {
    COHORT_MODULE_CHECK(input.rank() == 4 && input[1] == config_.in_channels &&
                            input[2] == config_.image_size && input[3] == config_.image_size,
                        "expected input [N, ", config_.in_channels, ", ", config_.image_size, ", ",
                        config_.image_size, "], got ", input);
    return Shape{input[0], config_.num_classes};
  }

  Tensor forward_impl(const Tensor& x) override {
    output_shape_impl(x.shape());
    batch_ = x.dim(0);
    const i64 d = config_.hidden_dim;
    // [N, D, h, w] -> [N, D, T] -> [N, T, D]
    const Tensor grid = conv_proj_->forward(x);
    const Tensor tokens = ops::permute(grid.reshape({batch_, d, tokens_}), {0, 2, 1});
    // [class token, tokens] -> [N, T + 1, D]
    Tensor seq = Tensor::empty(Shape{batch_, tokens_ + 1, d}, DType::f32, x.device());
    ops::slice_copy(class_token_->value, 0, seq, 0, 1, 1);
    ops::slice_copy(tokens, 0, seq, 1, tokens_, 1);
    const Tensor encoded = encoder_->forward(seq);
    return heads_->forward(ops::narrow(encoded, 1, 0, 1).reshape({batch_, d}));
  }

  Tensor backward_impl(const Tensor& grad_output, bool need_input_grad) override {
    const i64 d = config_.hidden_dim;
    Device& dev = grad_output.device();
    const Tensor dcls = heads_->backward(grad_output);
    Tensor dencoded = Tensor::zeros(Shape{batch_, tokens_ + 1, d}, DType::f32, dev);
    ops::slice_copy(dcls.reshape({batch_, 1, d}), 0, dencoded, 0, 1, 1);
    const Tensor dseq = encoder_->backward(dencoded);
    const Tensor dtokens = ops::narrow(dseq, 1, 1, tokens_);
    const Tensor dgrid = ops::permute(dtokens, {0, 2, 1}).reshape({batch_, d, grid_, grid_});
    Tensor dx = conv_proj_->backward(dgrid, need_input_grad);
    if (class_token_->requires_grad) {  // registered first: its gradient is reported last
      Tensor dct = class_token_->grad.reshape({d});
      ops::bias_grad(ops::narrow(dseq, 1, 0, 1).reshape({batch_, d}), dct, -1);
      grad_ready(class_token_);
    }
    return dx;
  }

  void summarize(const Shape& input, int depth, std::vector<SummaryRow>& rows) const override {
    Module::summarize(input, depth, rows);
    const Shape seq{input[0], tokens_ + 1, config_.hidden_dim};
    summarize_child(*conv_proj_, input, depth + 1, rows);
    summarize_child(*encoder_, seq, depth + 1, rows);
    summarize_child(*heads_, Shape{input[0], config_.hidden_dim}, depth + 1, rows);
  }

 private:
  ViTConfig config_;
  i64 grid_ = 0, tokens_ = 0;
  ParameterPtr class_token_;
  std::shared_ptr<nn::Conv2d> conv_proj_;
  std::shared_ptr<Encoder> encoder_;
  std::shared_ptr<nn::Sequential> heads_;
  i64 batch_ = 0;  // batch of the last forward
};

}  // namespace

nn::ModulePtr vision_transformer(Device& device, const ViTConfig& config) {
  return nn::make<VisionTransformer>(config, device);
}

nn::ModulePtr vit(Device& device, const ModelConfig& config) {
  ViTConfig c;
  c.num_classes = config.num_classes;
  c.in_channels = config.in_channels;
  c.image_size = config.image_size;
  return vision_transformer(device, c);
}

}  // namespace cohort::models

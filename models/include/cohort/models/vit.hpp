// The vision transformer of the zoo: torchvision.models.VisionTransformer with its structure,
// initialisation and state_dict names (class_token, conv_proj.*, encoder.pos_embedding,
// encoder.layers.encoder_layer_<i>.{ln_1, self_attention, ln_2, mlp.0, mlp.3}.*, encoder.ln.*,
// heads.head.*), so a torchvision model with the same arguments loads its checkpoints strictly.
#pragma once

#include <cstdint>

#include "cohort/core/device.hpp"
#include "cohort/layers/module.hpp"
#include "cohort/models/config.hpp"

namespace cohort::models {

// torchvision's VisionTransformer arguments (representation_size = None, no conv stem,
// attention_dropout = 0); the defaults are the zoo's CIFAR-sized ViT.
struct ViTConfig {
  std::int64_t image_size = 32;   // H = W of the input, a multiple of patch_size
  std::int64_t patch_size = 4;
  std::int64_t num_layers = 6;
  std::int64_t num_heads = 8;
  std::int64_t hidden_dim = 256;  // a multiple of num_heads
  std::int64_t mlp_dim = 512;
  std::int64_t num_classes = 10;
  std::int64_t in_channels = 3;   // torchvision fixes 3
  float dropout = 0.0f;           // encoder input, after attention, inside the MLP
  float layer_norm_eps = 1e-6f;
};

// The zoo's ViT: ViTConfig's defaults (patch 4, 6 layers, 8 heads, hidden 256, MLP 512) with
// config's classes, input channels and image size, i.e. torchvision's
// VisionTransformer(image_size=S, patch_size=4, num_layers=6, num_heads=8, hidden_dim=256,
// mlp_dim=512, num_classes=K). Input [N, C, S, S] with S a multiple of 4; output logits [N, K].
nn::ModulePtr vit(Device& device, const ModelConfig& config = {});

// torchvision's VisionTransformer for any ViTConfig: conv_proj (patch_size x patch_size, stride
// patch_size) -> [N, D, S/p, S/p] -> tokens [N, T, D] -> class token prepended -> + pos_embedding
// -> encoder blocks -> encoder.ln -> token 0 -> heads.head. Initialisation as torchvision's:
// conv_proj weight truncated normal (std sqrt(1 / fan_in), bounds [-2, 2]) and zero bias,
// pos_embedding N(0, 0.02^2), class_token and heads.head zeros, blocks as nn::EncoderBlock.
// Bad arguments are errors naming the model ("VisionTransformer: image_size 30 is not divisible
// by patch_size 4").
nn::ModulePtr vision_transformer(Device& device, const ViTConfig& config);

}  // namespace cohort::models

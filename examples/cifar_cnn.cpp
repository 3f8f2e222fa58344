// The CIFAR-10 workloads: CNN-A, CNN-B, ResNet9 and the ViT (cohort::models) with the PyTorch
// scripts' flags. Fashion-MNIST (Debian's dataset-fashion-mnist, padded to 32x32, 3 channels)
// stands in where CIFAR-10 is absent; --synthetic trains on generated images.
//
//   build/bin/cifar_cnn --model resnet9 --dataset fashion-mnist --epochs 1 --max-steps 100
//   build/bin/cohortrun --nproc-per-node 2 build/bin/cifar_cnn --model cnn_a --comm shm --synthetic
//   build/bin/cifar_cnn --model resnet9 --data cifar-10-batches-bin --optimizer adam --lr 0.001
//       --weight-decay 0.001 --epochs 10 --model-folder checkpoints/
#include "common/zoo_train.hpp"

int main(int argc, char** argv) {
  return examples::zoo_main(
      argc, argv,
      {"cifar_cnn",
       "CIFAR-10 CNNs, ResNet9 and a ViT (Fashion-MNIST padded to 32x32 where CIFAR-10 is absent)",
       "cnn_a", {"cnn_a", "cnn_b", "resnet9", "vit", "resnet50", "resnet18", "resnet34", "resnet101",
                  "resnet152", "wide_resnet50_2"},  // default model, accepted
       "cifar10", {"cifar10", "fashion-mnist"}});                  // default data set, accepted
}

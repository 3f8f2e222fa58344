// ResNet-50 (torchvision's) on TinyImageNet: 200 classes of 64x64 JPEGs decoded with
// libjpeg-turbo by the loader's workers, randomly cropped (padding 4) and flipped; data-parallel
// under any launcher. The same program as cifar_cnn (examples/common/zoo_train.cpp) with its own
// defaults.
//
//   build/bin/resnet50_tinyimagenet --data tiny-imagenet-200 --workers 4 --epochs 10
//   build/bin/cohortrun --nproc-per-node 2 build/bin/resnet50_tinyimagenet --synthetic
//       --max-steps 20
#include "common/zoo_train.hpp"

int main(int argc, char** argv) {
  return examples::zoo_main(
      argc, argv,
      {"resnet50_tinyimagenet", "ResNet-50 on TinyImageNet (64x64, 200 classes)",
       "resnet50", {"resnet50", "resnet9", "cnn_b", "cnn_a", "vit"},  // default model, accepted
       "tinyimagenet", {"tinyimagenet", "fashion-mnist"}});           // default data set, accepted
}

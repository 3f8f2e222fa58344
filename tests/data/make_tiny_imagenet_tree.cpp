// make_tiny_imagenet_tree DIR: writes the unit test's small TinyImageNet tree (3 classes x 2
// training images, 3 validation images, one grayscale) into DIR, for the examples' tests.
#include <cstdio>
#include <exception>

#include "tiny_imagenet_tree.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_tiny_imagenet_tree DIR\n");
    return 2;
  }
  try {
    tiny_imagenet_tree::make_tree(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_tiny_imagenet_tree: %s\n", e.what());
    return 1;
  }
  return 0;
}

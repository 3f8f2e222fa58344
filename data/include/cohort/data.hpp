// Everything of cohort::data: data sets (IDX/MNIST, CIFAR-10, TinyImageNet, image folders,
// synthetic, subsets, partitions), transforms, the DistributedSampler and the DataLoader.
#pragma once

#include "cohort/data/cifar10.hpp"
#include "cohort/data/dataloader.hpp"
#include "cohort/data/dataset.hpp"
#include "cohort/data/idx.hpp"
#include "cohort/data/image_folder.hpp"
#include "cohort/data/sampler.hpp"
#include "cohort/data/synthetic.hpp"
#include "cohort/data/tiny_imagenet.hpp"
#include "cohort/data/transforms.hpp"

// The zoo's per-family builders (one .cpp each), called by zoo.cpp with resolved options.
#pragma once

#include "trainer/zoo/zoo.h"

namespace fastnn::zoo {

NetDef build_lenet(const ZooOptions& o);
NetDef build_mlp(const ZooOptions& o);
NetDef build_cifarnet(const ZooOptions& o);
NetDef build_resnet_cifar(const ZooOptions& o, int depth);
NetDef build_resnet_v1(const ZooOptions& o, int depth);
NetDef build_resnet_v1_5(const ZooOptions& o, int depth);  // ResNet-50 v1.5 (torchvision, MLPerf)
NetDef build_resnet_v2(const ZooOptions& o, int depth);
NetDef build_vgg(const ZooOptions& o, int depth);
NetDef build_inception_v3(const ZooOptions& o);
NetDef build_inception_resnet_v2(const ZooOptions& o);
NetDef build_mobilenet_v1(const ZooOptions& o, double multiplier);
NetDef build_mobilenet_v2(const ZooOptions& o, double multiplier, bool finegrain);
NetDef build_alexnet_v2(const ZooOptions& o);
NetDef build_overfeat(const ZooOptions& o);
NetDef build_inception_v1(const ZooOptions& o);
NetDef build_inception_v2(const ZooOptions& o);
NetDef build_inception_v4(const ZooOptions& o);
enum class NasVariant { kCifar, kMobile, kLarge };
NetDef build_nasnet(const ZooOptions& o, NasVariant v);
NetDef build_pnasnet(const ZooOptions& o, NasVariant v);  // kMobile or kLarge

}  // namespace fastnn::zoo

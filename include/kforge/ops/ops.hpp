// kforge/ops/ops.hpp — every op descriptor.
#pragma once

#include "kforge/ops/attention.hpp"
#include "kforge/ops/conv2d.hpp"
#include "kforge/ops/elementwise.hpp"
#include "kforge/ops/embedding.hpp"
#include "kforge/ops/gated.hpp"
#include "kforge/ops/gemm.hpp"
#include "kforge/ops/kv_append.hpp"
#include "kforge/ops/norm.hpp"
#include "kforge/ops/reduce.hpp"
#include "kforge/ops/rope.hpp"
#include "kforge/ops/softmax.hpp"
#include "kforge/ops/topk.hpp"

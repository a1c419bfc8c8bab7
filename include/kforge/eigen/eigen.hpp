// kforge/eigen/eigen.hpp — policy::eigen, the reference backend, for every op.
#pragma once

#include "kforge/eigen/attention.hpp"
#include "kforge/eigen/conv2d.hpp"
#include "kforge/eigen/elementwise.hpp"
#include "kforge/eigen/embedding.hpp"
#include "kforge/eigen/gated.hpp"
#include "kforge/eigen/gemm.hpp"
#include "kforge/eigen/kv_append.hpp"
#include "kforge/eigen/reduce.hpp"
#include "kforge/eigen/rope.hpp"
#include "kforge/eigen/softmax.hpp"
#include "kforge/eigen/topk.hpp"

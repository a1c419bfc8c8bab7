// kforge/cpu/cpu.hpp — the CPU backend: policy::blocked<Knobs...> (cache-
// blocked, packed, SIMD micro-kernels on the calling thread) and
// policy::threaded<blocked<Knobs...>, threads<N>> (the same kernels on a
// persistent thread pool), for every op family.
//
// kforge::cpu::isa_name() and kforge::cpu::microkernel_name<Policy>() say
// which micro-kernel the build runs.
#pragma once

#include "kforge/cpu/attention.hpp"
#include "kforge/cpu/config.hpp"
#include "kforge/cpu/conv2d.hpp"
#include "kforge/cpu/elementwise.hpp"
#include "kforge/cpu/embedding.hpp"
#include "kforge/cpu/gated.hpp"
#include "kforge/cpu/gemm.hpp"
#include "kforge/cpu/isa.hpp"
#include "kforge/cpu/kv_append.hpp"
#include "kforge/cpu/reduce.hpp"
#include "kforge/cpu/rope.hpp"
#include "kforge/cpu/softmax.hpp"
#include "kforge/cpu/thread_pool.hpp"
#include "kforge/cpu/topk.hpp"

// Must compile for every x86-64 level, not only the machine's own ISA: the
// CPU backend (blocked, threaded, every op and dtype, through execute<>) and
// the Eigen reference, for -march=x86-64 (scalar micro-kernel), x86-64-v3
// (AVX2+FMA) and x86-64-v4 (AVX-512). Checked with -fsyntax-only by CTest.
#include <kforge/kforge.hpp>
#include <kforge/validate/execute.hpp>
#include <kforge/cpu/quant_gemm.hpp>

template void kforge::execute<kforge::policy::blocked<>>(const kforge::problem&, std::vector<kforge::host_tensor>&);
template void kforge::execute<kforge::policy::threaded<>>(const kforge::problem&, std::vector<kforge::host_tensor>&);

// The quantized-weight gemm: its AVX-512 paths on x86-64-v4, the generic one elsewhere.
void quantized(const kforge::quantized_matrix& w, const float* x, float* y) { kforge::cpu::gemm_quantized(w, x, 1, w.cols(), y, w.rows()); }

int main() {}

// bench/quant_check.cpp — kforge's FP8 (E4M3, E5M2), E8M0 and E2M1 codecs
// against PyTorch's casts (bench/torch_quant.py compares; run both on the GPU
// machine: `quant_check DIR && python3 bench/torch_quant.py DIR`).
//
// Writes into DIR: inputs.f32 (every 251st float32 bit pattern, and each
// finite FP8 value and the midpoints between neighbours, with the floats
// either side of each), e4m3.u8 / e5m2.u8 (kforge's encodings of them),
// dec_e4m3.f32, dec_e5m2.f32, dec_e8m0.f32, dec_e2m1.f32 (kforge's value of
// every code).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kforge/core/quant.hpp"

namespace {
template <class T>
void put(const std::string& path, const std::vector<T>& v) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(v.data(), sizeof(T), v.size(), f) != v.size() || std::fclose(f) != 0) {
    std::fprintf(stderr, "quant_check: cannot write %s\n", path.c_str());
    std::exit(1);
  }
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: quant_check DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::vector<float> x;
  for (std::uint64_t b = 0; b < (1ull << 32); b += 251) {
    float f;
    const auto u = static_cast<std::uint32_t>(b);
    std::memcpy(&f, &u, 4);
    x.push_back(f);
  }
  for (auto dec : {kforge::e4m3_to_float, kforge::e5m2_to_float}) {
    float prev = 0;
    for (int c = 0; c < 128; ++c) {
      const float v = dec(static_cast<std::uint8_t>(c));
      if (!std::isfinite(v)) continue;
      for (float s : {1.0f, -1.0f})
        for (float p : {v, 0.5f * (prev + v)})
          for (float q : {std::nextafter(p, -1e30f), p, std::nextafter(p, 1e30f)}) x.push_back(s * q);
      prev = v;
    }
  }
  std::vector<std::uint8_t> e4(x.size()), e5(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) e4[i] = kforge::float_to_e4m3(x[i]), e5[i] = kforge::float_to_e5m2(x[i]);
  std::vector<float> d4(256), d5(256), d8(256), d2(16);
  for (int c = 0; c < 256; ++c) {
    d4[static_cast<std::size_t>(c)] = kforge::e4m3_to_float(static_cast<std::uint8_t>(c));
    d5[static_cast<std::size_t>(c)] = kforge::e5m2_to_float(static_cast<std::uint8_t>(c));
    d8[static_cast<std::size_t>(c)] = kforge::e8m0_to_float(static_cast<std::uint8_t>(c));
  }
  for (int c = 0; c < 16; ++c) d2[static_cast<std::size_t>(c)] = kforge::e2m1_to_float(static_cast<std::uint8_t>(c));
  put(dir + "/inputs.f32", x);
  put(dir + "/e4m3.u8", e4);
  put(dir + "/e5m2.u8", e5);
  put(dir + "/dec_e4m3.f32", d4);
  put(dir + "/dec_e5m2.f32", d5);
  put(dir + "/dec_e8m0.f32", d8);
  put(dir + "/dec_e2m1.f32", d2);
  std::printf("quant_check: %zu inputs written to %s\n", x.size(), dir.c_str());
  return 0;
}

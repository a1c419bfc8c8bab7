#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Io { float v[]; };
layout(push_constant) uniform Push { uint n; uint seed; } pc;
void main() {
  uint o = pc.n;
  float a = v[o], one = v[o + 1u], big = v[o + 2u];
  v[o + 4u] = a * one;
  v[o + 5u] = a + a;
  v[o + 6u] = (a * one) * big;
  v[o + 7u] = a / one;
  v[o + 8u] = exp(v[o + 3u]);       // exp(-100): 3.7e-44, subnormal
  v[o + 9u] = fma(a, one, 0.0);
  v[o + 10u] = 1.0 / big;            // 2^-100 normal
  v[o + 11u] = (1.0 / big) * (1.0 / big * 1.1805916e21); // 2^-130 from normals: an output flush
}

// GGUF files (kforge/model/gguf.hpp) against ggml's own implementation:
// tests/data/gguf/ggml_written.gguf was written by ggml's gguf writer
// (ggml_xcheck.c beside it); kforge reads every key, type and tensor ggml
// wrote, with the data hashes ggml's reader printed, and kforge's writer
// given the same content produces the same bytes. Every corrupt header is
// refused with its reason before anything is allocated from a claim.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <array>
#include <iterator>
#include <string>
#include <vector>

#include "kforge/model/gguf.hpp"
#include "checkpoint_checks.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace kforge;
using namespace kforge::model;
using ktest::checkpoint_error_of;

namespace {

fs::path gguf_data(const std::string& name) { return ktest::test_data("gguf") / name; }

std::uint64_t fnv(std::span<const std::byte> b) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::byte c : b) h = (h ^ static_cast<std::uint8_t>(c)) * 1099511628211ull;
  return h;
}

/// The bytes ggml_xcheck.c gives tensor i: (k·7 + i·31 + 1), with each q8_0/q4_0 block's f16 scale 1.0 and each
/// mxfp4 block's exponent byte 127.
std::vector<std::byte> pattern(int i, std::size_t n, std::uint32_t type) {
  std::vector<std::byte> d(n);
  for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<std::byte>(static_cast<unsigned char>(k * 7 + static_cast<std::size_t>(i) * 31 + 1));
  const std::size_t block = find_ggml_type(type)->bytes;
  for (std::size_t b = 0; b < n && (type == ggml_type_id::q8_0 || type == ggml_type_id::q4_0); b += block)
    d[b] = std::byte{0x00}, d[b + 1] = std::byte{0x3c};
  for (std::size_t b = 0; b < n && type == ggml_type_id::mxfp4; b += block) d[b] = std::byte{127};
  return d;
}

struct written_tensor {
  const char* name;
  std::uint32_t type;
  std::vector<std::int64_t> ne;
  std::uint64_t offset, bytes, hash;  ///< what ggml's reader printed
};
const std::vector<written_tensor> ggml_tensors = {
    {"token_embd.weight", ggml_type_id::f32, {8, 3}, 0, 96, 0x2e7ad26ee2160043ull},
    {"blk.0.attn_q.weight", ggml_type_id::q8_0, {64, 3}, 96, 204, 0xcaf0b1ba178c35e3ull},
    {"blk.0.attn_k.weight", ggml_type_id::q4_0, {32, 5}, 320, 90, 0x55f0e491aa5d1b3full},
    {"blk.0.ffn_up.weight", ggml_type_id::mxfp4, {32, 2}, 416, 34, 0x1a759bbb3e722c71ull},
    {"output_norm.weight", ggml_type_id::f16, {7}, 480, 14, 0x8320ac2ca01c2972ull},
    {"output.weight", ggml_type_id::bf16, {8, 3}, 512, 48, 0x004ef84bbe341213ull}};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}


}  // namespace

TEST_CASE("gguf: what ggml's writer wrote, kforge reads — every key, type, tensor and byte") {
  const gguf_file f(gguf_data("ggml_written.gguf"));
  CHECK(f.version() == 3);
  CHECK(f.alignment() == 32);
  REQUIRE(f.metadata().size() == 9);
  CHECK(f.metadata()[0].first == "general.architecture");
  CHECK(f.find("general.architecture")->s == "llama");
  CHECK(f.find("llama.block_count")->type == gguf_type::u32);
  CHECK(f.find("llama.block_count")->u == 2);
  CHECK(f.find("llama.attention.layer_norm_rms_epsilon")->f == static_cast<double>(1e-5f));
  CHECK(f.find("test.flag")->b);
  CHECK(f.find("test.i8")->i == -3);
  CHECK(f.find("test.u64")->u == (1ull << 40));
  CHECK(f.find("test.f64")->f == 0.1);
  const gguf_value& toks = *f.find("tokenizer.ggml.tokens");
  REQUIRE(toks.items.size() == 3);
  CHECK(toks.elem == gguf_type::string);
  CHECK(toks.items[1].s == "\xc4\xa0" "b");
  CHECK(f.find("tokenizer.ggml.scores")->items[1].f == -1.0);
  REQUIRE(f.tensors().size() == ggml_tensors.size());
  for (std::size_t i = 0; i < ggml_tensors.size(); ++i) {
    const auto& want = ggml_tensors[i];
    const gguf_tensor& t = f.tensors()[i];
    CAPTURE(want.name);
    CHECK(t.name == want.name);
    CHECK(t.type == want.type);
    CHECK(t.ne == want.ne);
    CHECK(t.offset == want.offset);
    CHECK(t.bytes.size() == want.bytes);
    CHECK(fnv(t.bytes) == want.hash);
    CHECK(f.tensor(want.name) == &t);
  }
}

TEST_CASE("gguf: kforge's writer, given what ggml's was given, writes ggml's bytes") {
  gguf_writer x;
  x.string("general.architecture", "llama").u32("llama.block_count", 2).f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  x.boolean("test.flag", true).i8("test.i8", -3).u64("test.u64", 1ull << 40).f64("test.f64", 0.1);
  x.strings("tokenizer.ggml.tokens", {"a", "\xc4\xa0" "b", "<s>"}).f32s("tokenizer.ggml.scores", {0.5f, -1.0f, 2.0f});
  for (std::size_t i = 0; i < ggml_tensors.size(); ++i) {
    const auto& t = ggml_tensors[i];
    x.tensor(t.name, t.type, t.ne, pattern(static_cast<int>(i), t.bytes, t.type));
  }
  CHECK(x.bytes() == slurp(gguf_data("ggml_written.gguf")));
  CHECK_THROWS_AS(x.tensor("bad", ggml_type_id::q8_0, {33}, std::vector<std::byte>(34)), argument_error);
  // another alignment: written as general.alignment, and the reader pads by it
  gguf_writer a(64);
  a.tensor("x", ggml_type_id::f32, {3}, std::vector<std::byte>(12)).tensor("y", ggml_type_id::f32, {2}, std::vector<std::byte>(8, std::byte{1}));
  const fs::path p = ktest::scratch_dir("kforge_gguf_") / "aligned.gguf";
  std::ofstream(p, std::ios::binary) << a.bytes();
  const gguf_file f(p);
  CHECK(f.alignment() == 64);
  CHECK(f.tensor("y")->offset == 64);
  CHECK(static_cast<std::uint8_t>(f.tensor("y")->bytes[7]) == 1);
}

namespace {
/// GGUF bytes assembled by hand, for the corrupt cases.
struct raw {
  std::string b = "GGUF";
  template <class U>
  raw& put(U v) {
    b.append(reinterpret_cast<const char*>(&v), sizeof v);
    return *this;
  }
  raw& str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b += s;
    return *this;
  }
  raw& header(std::uint64_t tensors, std::uint64_t kvs, std::uint32_t version = 3) {
    return put(version).put(tensors).put(kvs);
  }
  /// A tensor info: name, extents, type, offset.
  raw& info(const std::string& name, std::vector<std::int64_t> ne, std::uint32_t type, std::uint64_t offset) {
    str(name).put(static_cast<std::uint32_t>(ne.size()));
    for (auto e : ne) put(e);
    return put(type).put(offset);
  }
  raw& pad(std::size_t to = 32) {
    b.append((to - b.size() % to) % to, '\0');
    return *this;
  }
};
}  // namespace

TEST_CASE("gguf: a corrupt file is refused with its reason, before anything is allocated from a claim") {
  const fs::path p = ktest::scratch_dir("kforge_gguf_") / "bad.gguf";
  auto error_for = [&](const std::string& bytes) {
    std::ofstream(p, std::ios::binary | std::ios::trunc) << bytes;
    return checkpoint_error_of([&] { gguf_file f(p); });
  };
  const auto kv = [](raw r, gguf_type t) { return r.put(static_cast<std::uint32_t>(t)); };
  CHECK(error_for("GGML").find("magic") != std::string::npos);
  CHECK(error_for(raw{}.header(0, 0, 1).b).find("version 1") != std::string::npos);
  CHECK(error_for(raw{}.header(0, 0, 0x03000000).b).find("version 50331648") != std::string::npos);  // big-endian
  CHECK(error_for(raw{}.put<std::uint32_t>(3).put<std::uint64_t>(0).b).find("ends inside the key-value count") != std::string::npos);
  CHECK(error_for(raw{}.header(0, 1ull << 40).b).find("claims 1099511627776 key-value pairs") != std::string::npos);
  CHECK(error_for(raw{}.header(1ull << 40, 0).b).find("claims 1099511627776 tensors") != std::string::npos);
  CHECK(error_for(raw{}.header(0, 1).put<std::uint64_t>(1ull << 60).put(std::array<char, 16>{}).b).find("claims 1152921504606846976 bytes") !=
        std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str("k"), gguf_type::array).put(static_cast<std::uint32_t>(gguf_type::u64)).put<std::uint64_t>(1ull << 40).b)
            .find("claims 1099511627776 elements") != std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str("k"), gguf_type::array).put(static_cast<std::uint32_t>(gguf_type::array)).put<std::uint64_t>(0).b)
            .find("array of arrays") != std::string::npos);
  CHECK(error_for(raw{}.header(0, 1).str("k").put<std::uint32_t>(13).b).find("value type 13") != std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str("k"), gguf_type::boolean).put<std::uint8_t>(2).b).find("bool of byte 2") != std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str(""), gguf_type::u8).put<std::uint8_t>(0).b).find("key 0 is empty") != std::string::npos);
  CHECK(error_for(kv(kv(raw{}.header(0, 2).str("k"), gguf_type::u8).put<std::uint8_t>(0).str("k"), gguf_type::u8).put<std::uint8_t>(0).b)
            .find("key 'k' appears twice") != std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str("general.alignment"), gguf_type::u32).put<std::uint32_t>(48).b).find("not a power of 2") !=
        std::string::npos);
  CHECK(error_for(kv(raw{}.header(0, 1).str("general.alignment"), gguf_type::u64).put<std::uint64_t>(32).b).find("must be a u32") !=
        std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info(std::string(64, 'n'), {4}, 0, 0).pad().b).find("name of 64 bytes") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {1, 1, 1, 1, 1}, 0, 0).b).find("5 dimensions") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {-4}, 0, 0).b).find("negative extent") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {1ll << 40, 1ll << 40}, 0, 0).b).find("more elements than int64") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {4}, 4, 0).b).find("ggml type 4, which kforge does not know") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {33}, ggml_type_id::q8_0, 0).b).find("not a multiple of its blocks of 32") != std::string::npos);
  CHECK(error_for(raw{}.header(2, 0).info("t", {4}, 0, 0).info("t", {4}, 0, 32).b).find("'t' appears twice") != std::string::npos);
  CHECK(error_for(raw{}.header(2, 0).info("a", {4}, 0, 0).info("b", {4}, 0, 16).pad().put(std::array<char, 64>{}).b)
            .find("'b' is at offset 16 of the data, expected 32") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).info("t", {1ll << 40}, 0, 0).pad().put(std::array<char, 16>{}).b).find("runs past the end") !=
        std::string::npos);  // 4 TB claimed, nothing allocated
  CHECK(error_for(raw{}.header(1, 0).info("t", {8}, 0, 0).pad().put(std::array<char, 16>{}).b).find("runs past the end") !=
        std::string::npos);  // truncated data
  CHECK(error_for(raw{}.header(1, 0).info("t", {8}, 0, 0).b).find("ends before its data section") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).b).find("claims 1 tensors") != std::string::npos);
  CHECK(error_for(raw{}.header(1, 0).str("t").put<std::uint32_t>(1).put<std::int64_t>(4).put<std::uint32_t>(0).put<std::uint32_t>(0).b)
            .find("ends inside tensor 't' (truncated") != std::string::npos);
  CHECK(checkpoint_error_of([&] { gguf_file f(p.parent_path() / "missing.gguf"); }).find("cannot open") != std::string::npos);
}

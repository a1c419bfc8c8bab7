// kforge/model/gguf.hpp — GGUF files (llama.cpp's format, version 2 and 3),
// read through mmap and written.
//
// The format (ggml's docs/gguf.md; ggml's src/gguf.cpp is the reference for
// what is accepted): "GGUF", a u32 version, u64 tensor and key-value counts,
// the key-value pairs (a string key, a u32 value type, the value: u8 … f64,
// bool, a u64-length string, or an array of one scalar or string type), the
// tensor infos (name, u32 dimension count ≤ 4, u64 extents innermost first,
// u32 ggml type, u64 offset), padding to `general.alignment` (u32, a power
// of two, default 32), then the data. Little-endian only. As the reference
// reader, kforge refuses: another magic or version; a count, a string or an
// array longer than the bytes left could hold (checked before anything is
// allocated: a header claiming 2^40 tensors or a 2^60-byte string costs
// nothing); an empty or duplicate key; a value type outside the enum, an
// array of arrays; `general.alignment` not a u32 power of two; a tensor name
// over 63 bytes or seen twice; more than 4 dimensions, a negative extent or
// an element count past int64; a type kforge does not know or a row
// (extent 0) that is not a whole number of its blocks; offsets that are not
// the running sum of the tensors' padded sizes; and (beyond the reference,
// which reads lazily) a tensor whose bytes run past the end of the file.
// Errors are checkpoint_error naming the file, the key or the tensor.
//
// Types: every type ggml had at this writing is known by its block and size
// (ggml_type_size / ggml_blck_size, generated from ggml) so that any GGUF's
// layout can be checked; tensors of F32, F16, BF16, Q8_0, Q4_0 and MXFP4 are
// the ones kforge loads (core/quant.hpp's q8_0, q4_0 and mxfp4 are GGUF's
// blocks, byte for byte).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/model/safetensors.hpp"

namespace kforge::model {

/// A ggml tensor type: its id, name, elements per block and bytes per block.
struct ggml_type_info {
  std::uint32_t id;
  std::string_view name;
  std::int64_t block;
  std::size_t bytes;
};
/// ggml's types (printed from ggml's own ggml_type_name/blck_size/type_size at d99724f2).
inline constexpr ggml_type_info ggml_types[] = {
    {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
    {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},      {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
    {10, "q2_K", 256, 84},    {11, "q3_K", 256, 110},   {12, "q4_K", 256, 144},   {13, "q5_K", 256, 176},
    {14, "q6_K", 256, 210},   {15, "q8_K", 256, 292},   {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
    {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},   {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
    {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
    {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
    {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},   {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
    {40, "nvfp4", 64, 36},    {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18}};
namespace ggml_type_id {
inline constexpr std::uint32_t f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30, mxfp4 = 39;
}
inline const ggml_type_info* find_ggml_type(std::uint32_t id) {
  for (const auto& t : ggml_types)
    if (t.id == id) return &t;
  return nullptr;
}

/// A GGUF metadata value type.
enum class gguf_type : std::uint32_t { u8, i8, u16, i16, u32, i32, f32, boolean, string, array, u64, i64, f64 };

/// One metadata value: a scalar (integers in i or u, floats in f), a string, or an array of one type.
struct gguf_value {
  gguf_type type = gguf_type::u8;
  std::uint64_t u = 0;
  std::int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  gguf_type elem = gguf_type::u8;  ///< an array's element type
  std::vector<gguf_value> items;
};

struct gguf_tensor {
  std::string name;
  std::uint32_t type = 0;
  std::vector<std::int64_t> ne;  ///< extents, innermost (contiguous) first
  std::uint64_t offset = 0;      ///< from the data section's start
  std::span<const std::byte> bytes;
  std::int64_t numel() const { return numel_of(ne); }
  std::string ne_text() const { return extents_text(ne); }
};

inline constexpr std::uint32_t gguf_default_alignment = 32;

/// A GGUF file, mapped and checked (see the file's comment).
class gguf_file {
 public:
  explicit gguf_file(const std::filesystem::path& path) : map_(path) { parse(); }

  const std::filesystem::path& path() const { return map_.path(); }
  std::uint32_t version() const { return version_; }
  std::uint32_t alignment() const { return alignment_; }
  /// Keys in file order.
  const std::vector<std::pair<std::string, gguf_value>>& metadata() const { return kv_; }
  const gguf_value* find(std::string_view key) const {
    auto it = kv_index_.find(std::string(key));
    return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
  }
  const std::vector<gguf_tensor>& tensors() const { return tensors_; }
  const gguf_tensor* tensor(std::string_view name) const {
    auto it = tensor_index_.find(std::string(name));
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
  }
  std::size_t file_bytes() const { return map_.bytes().size(); }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw checkpoint_error("kforge: GGUF file '" + path().string() + "': " + why);
  }
  /// Bytes left after `at_`.
  std::uint64_t left() const { return map_.bytes().size() - at_; }
  template <class U>
  U read(const char* what) {
    if (left() < sizeof(U)) fail("ends inside " + std::string(what) + " (truncated at byte " + std::to_string(at_) + ")");
    U v;
    std::memcpy(&v, map_.bytes().data() + at_, sizeof(U));
    at_ += sizeof(U);
    return v;
  }
  std::string read_string(const std::string& what) {
    const auto n = read<std::uint64_t>(what.c_str());
    if (n > left())
      fail(what + " claims " + std::to_string(n) + " bytes, more than the " + std::to_string(left()) + " left in the file");
    std::string s(reinterpret_cast<const char*>(map_.bytes().data()) + at_, static_cast<std::size_t>(n));
    at_ += n;
    return s;
  }
  /// The least bytes one value of type t takes (an array: its header).
  static std::uint64_t min_bytes(gguf_type t) {
    switch (t) {
      case gguf_type::u8: case gguf_type::i8: case gguf_type::boolean: return 1;
      case gguf_type::u16: case gguf_type::i16: return 2;
      case gguf_type::u32: case gguf_type::i32: case gguf_type::f32: return 4;
      case gguf_type::array: return 12;
      default: return 8;  // string (its length), u64, i64, f64
    }
  }
  gguf_type read_type(const std::string& what) {
    const auto t = read<std::uint32_t>(what.c_str());
    if (t > static_cast<std::uint32_t>(gguf_type::f64)) fail(what + " has value type " + std::to_string(t) + ", not a GGUF type");
    return static_cast<gguf_type>(t);
  }
  gguf_value read_value(gguf_type t, const std::string& what) {
    gguf_value v;
    v.type = t;
    switch (t) {
      case gguf_type::u8: v.u = read<std::uint8_t>(what.c_str()); break;
      case gguf_type::i8: v.i = read<std::int8_t>(what.c_str()); break;
      case gguf_type::u16: v.u = read<std::uint16_t>(what.c_str()); break;
      case gguf_type::i16: v.i = read<std::int16_t>(what.c_str()); break;
      case gguf_type::u32: v.u = read<std::uint32_t>(what.c_str()); break;
      case gguf_type::i32: v.i = read<std::int32_t>(what.c_str()); break;
      case gguf_type::u64: v.u = read<std::uint64_t>(what.c_str()); break;
      case gguf_type::i64: v.i = read<std::int64_t>(what.c_str()); break;
      case gguf_type::f32: v.f = read<float>(what.c_str()); break;
      case gguf_type::f64: v.f = read<double>(what.c_str()); break;
      case gguf_type::boolean: {
        const auto b = read<std::uint8_t>(what.c_str());
        if (b > 1) fail(what + " is a bool of byte " + std::to_string(b) + " (0 or 1)");
        v.b = b == 1;
        break;
      }
      case gguf_type::string: v.s = read_string(what); break;
      case gguf_type::array: {
        v.elem = read_type(what);
        if (v.elem == gguf_type::array) fail(what + " is an array of arrays, which GGUF readers do not take");
        const auto n = read<std::uint64_t>(what.c_str());
        if (n > left() / min_bytes(v.elem))
          fail(what + " claims " + std::to_string(n) + " elements, more than the " + std::to_string(left()) + " bytes left could hold");
        v.items.reserve(static_cast<std::size_t>(n));
        for (std::uint64_t k = 0; k < n; ++k) v.items.push_back(read_value(v.elem, what));
        break;
      }
    }
    return v;
  }

  void parse() {
    if (map_.bytes().size() < 4 || std::memcmp(map_.bytes().data(), "GGUF", 4) != 0) fail("does not start with the magic \"GGUF\"");
    at_ = 4;
    version_ = read<std::uint32_t>("the version");
    if (version_ != 2 && version_ != 3)
      fail("is version " + std::to_string(version_) + "; kforge reads GGUF versions 2 and 3 (little-endian)");
    const auto n_tensors = read<std::uint64_t>("the tensor count");
    const auto n_kv = read<std::uint64_t>("the key-value count");
    if (n_kv > left() / 12) fail("claims " + std::to_string(n_kv) + " key-value pairs, more than its bytes could hold");
    for (std::uint64_t k = 0; k < n_kv; ++k) {
      std::string key = read_string("key " + std::to_string(k));
      if (key.empty()) fail("key " + std::to_string(k) + " is empty");
      if (kv_index_.count(key)) fail("key '" + key + "' appears twice");
      const gguf_type t = read_type("key '" + key + "'");
      gguf_value v = read_value(t, "key '" + key + "'");
      kv_index_[key] = kv_.size();
      kv_.emplace_back(std::move(key), std::move(v));
    }
    if (const gguf_value* a = find("general.alignment")) {
      if (a->type != gguf_type::u32) fail("general.alignment must be a u32");
      if (a->u == 0 || (a->u & (a->u - 1)) != 0) fail("general.alignment " + std::to_string(a->u) + " is not a power of 2");
      alignment_ = static_cast<std::uint32_t>(a->u);
    }
    // a tensor info takes at least 8 (name length) + 4 + 4 + 8 bytes
    if (n_tensors > left() / 24) fail("claims " + std::to_string(n_tensors) + " tensors, more than its bytes could hold");
    for (std::uint64_t k = 0; k < n_tensors; ++k) {
      gguf_tensor t;
      t.name = read_string("tensor " + std::to_string(k) + "'s name");
      const std::string what = "tensor '" + t.name + "'";
      if (t.name.size() >= 64) fail(what + " has a name of " + std::to_string(t.name.size()) + " bytes (at most 63)");
      if (tensor_index_.count(t.name)) fail(what + " appears twice");
      const auto dims = read<std::uint32_t>(what.c_str());
      if (dims > 4) fail(what + " has " + std::to_string(dims) + " dimensions (at most 4)");
      std::int64_t n = 1;
      for (std::uint32_t d = 0; d < dims; ++d) {
        const auto e = read<std::int64_t>(what.c_str());
        if (e < 0) fail(what + " has a negative extent " + std::to_string(e));
        if (e > 0 && n > INT64_MAX / e) fail(what + " has more elements than int64 counts");
        n *= e;
        t.ne.push_back(e);
      }
      t.type = read<std::uint32_t>(what.c_str());
      const ggml_type_info* info = find_ggml_type(t.type);
      if (!info) fail(what + " has ggml type " + std::to_string(t.type) + ", which kforge does not know");
      const std::int64_t row = t.ne.empty() ? 1 : t.ne[0];
      if (row % info->block != 0)
        fail(what + " " + t.ne_text() + " of " + std::string(info->name) + " has rows of " + std::to_string(row) +
             " elements, not a multiple of its blocks of " + std::to_string(info->block));
      t.offset = read<std::uint64_t>(what.c_str());
      tensor_index_[t.name] = tensors_.size();
      tensors_.push_back(std::move(t));
    }
    const std::uint64_t data = tensors_.empty() ? at_ : (at_ + alignment_ - 1) / alignment_ * alignment_;
    if (data > map_.bytes().size()) fail("ends before its data section");
    const std::uint64_t avail = map_.bytes().size() - data;
    std::uint64_t expected = 0;
    for (gguf_tensor& t : tensors_) {
      const ggml_type_info& info = *find_ggml_type(t.type);
      const auto blocks = static_cast<std::uint64_t>(t.numel() / info.block);
      if (t.offset != expected)
        fail("tensor '" + t.name + "' is at offset " + std::to_string(t.offset) + " of the data, expected " + std::to_string(expected));
      if (t.offset > avail || blocks > avail / info.bytes || blocks * info.bytes > avail - t.offset)
        fail("tensor '" + t.name + "' " + t.ne_text() + " of " + std::string(info.name) + " runs past the end of the file (" +
             std::to_string(avail) + " data bytes)");
      const std::uint64_t bytes = blocks * info.bytes;
      t.bytes = map_.bytes().subspan(static_cast<std::size_t>(data + t.offset), static_cast<std::size_t>(bytes));
      expected = t.offset + (bytes + alignment_ - 1) / alignment_ * alignment_;
    }
  }

  mapped_file map_;
  std::uint64_t at_ = 0;
  std::uint32_t version_ = 0, alignment_ = gguf_default_alignment;
  std::vector<std::pair<std::string, gguf_value>> kv_;
  std::map<std::string, std::size_t> kv_index_;
  std::vector<gguf_tensor> tensors_;
  std::map<std::string, std::size_t> tensor_index_;
};

/// Builds GGUF v3 bytes: metadata in the order given, then tensor infos and
/// data (each tensor's bytes padded to the alignment), as ggml's writer lays them out.
class gguf_writer {
 public:
  explicit gguf_writer(std::uint32_t alignment = gguf_default_alignment) : alignment_(alignment) {
    if (alignment != gguf_default_alignment) value("general.alignment", gguf_type::u32, [&] { put<std::uint32_t>(alignment); });
  }
  gguf_writer& i8(const std::string& key, std::int8_t v) { return value(key, gguf_type::i8, [&] { put(v); }); }
  gguf_writer& u32(const std::string& key, std::uint32_t v) { return value(key, gguf_type::u32, [&] { put(v); }); }
  gguf_writer& i32(const std::string& key, std::int32_t v) { return value(key, gguf_type::i32, [&] { put(v); }); }
  gguf_writer& u64(const std::string& key, std::uint64_t v) { return value(key, gguf_type::u64, [&] { put(v); }); }
  gguf_writer& f32(const std::string& key, float v) { return value(key, gguf_type::f32, [&] { put(v); }); }
  gguf_writer& f64(const std::string& key, double v) { return value(key, gguf_type::f64, [&] { put(v); }); }
  gguf_writer& boolean(const std::string& key, bool v) { return value(key, gguf_type::boolean, [&] { put<std::uint8_t>(v ? 1 : 0); }); }
  gguf_writer& string(const std::string& key, const std::string& v) { return value(key, gguf_type::string, [&] { put_string(v); }); }
  gguf_writer& strings(const std::string& key, const std::vector<std::string>& v) {
    return value(key, gguf_type::array, [&] {
      put(static_cast<std::uint32_t>(gguf_type::string));
      put<std::uint64_t>(v.size());
      for (const auto& s : v) put_string(s);
    });
  }
  gguf_writer& f32s(const std::string& key, const std::vector<float>& v) {
    return value(key, gguf_type::array, [&] {
      put(static_cast<std::uint32_t>(gguf_type::f32));
      put<std::uint64_t>(v.size());
      for (float x : v) put(x);
    });
  }
  /// A tensor of ggml type `type`, extents innermost first, and its bytes (checked against the type's size).
  gguf_writer& tensor(const std::string& name, std::uint32_t type, std::vector<std::int64_t> ne, std::span<const std::byte> bytes) {
    const ggml_type_info* info = find_ggml_type(type);
    const std::int64_t n = numel_of(ne);
    if (!info || (ne.empty() ? 1 : ne[0]) % info->block != 0 ||
        static_cast<std::uint64_t>(n / info->block) * info->bytes != bytes.size())
      throw argument_error("kforge::model::gguf_writer: tensor '" + name + "' has " + std::to_string(bytes.size()) +
                           " bytes, not what its type and extents need");
    tensors_.push_back({name, type, std::move(ne), std::vector<std::byte>(bytes.begin(), bytes.end())});
    return *this;
  }
  std::string bytes() const {
    std::string out = "GGUF";
    auto raw = [&](const auto& v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); };
    raw(std::uint32_t{3});
    raw(static_cast<std::uint64_t>(tensors_.size()));
    raw(kv_count_);
    out += kv_;
    std::uint64_t offset = 0;
    for (const auto& t : tensors_) {
      raw(static_cast<std::uint64_t>(t.name.size()));
      out += t.name;
      raw(static_cast<std::uint32_t>(t.ne.size()));
      for (auto e : t.ne) raw(e);
      raw(t.type);
      raw(offset);
      offset += padded(t.bytes.size());
    }
    if (!tensors_.empty()) out.append(padded(out.size()) - out.size(), '\0');
    for (const auto& t : tensors_) {
      out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
      out.append(padded(t.bytes.size()) - t.bytes.size(), '\0');
    }
    return out;
  }

 private:
  struct pending {
    std::string name;
    std::uint32_t type;
    std::vector<std::int64_t> ne;
    std::vector<std::byte> bytes;
  };
  std::size_t padded(std::size_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  template <class U>
  void put(U v) {
    kv_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_string(const std::string& s) {
    put<std::uint64_t>(s.size());
    kv_ += s;
  }
  template <class F>
  gguf_writer& value(const std::string& key, gguf_type t, F&& body) {
    put_string(key);
    put(static_cast<std::uint32_t>(t));
    body();
    ++kv_count_;
    return *this;
  }
  std::uint32_t alignment_;
  std::string kv_;
  std::uint64_t kv_count_ = 0;
  std::vector<pending> tensors_;
};

}  // namespace kforge::model

// kforge/model/safetensors.hpp — Hugging Face's safetensors files, read
// through mmap (the page cache is the only copy of the bytes until a caller
// converts a tensor), and written (tests, conversions).
//
// The format (github.com/huggingface/safetensors, its Rust reader is the
// reference for what is accepted): an unsigned 64-bit little-endian N, N
// bytes of a UTF-8 JSON object, then the data. Each member of the object but
// "__metadata__" (an object of strings) is a tensor:
//   "name": {"dtype": "F16", "shape": [rows, cols], "data_offsets": [begin, end]}
// with offsets relative to the data's start, little-endian row-major
// elements. Like the Rust reader, kforge accepts a file only when: N ≤ 100 MB
// and 8 + N ≤ the file's size; the header parses as JSON (strict:
// core/json_read.hpp) and is an object; every tensor has exactly those three
// fields, a known dtype, non-negative extents whose product times the
// element size (no overflow) is end − begin; and the tensors, sorted by
// offset, tile the data exactly — no hole, no overlap, no byte past the
// last. Anything else is a checkpoint_error naming the file and the tensor,
// before any tensor is read; nothing is allocated from a claimed size (the
// claimed bytes are checked against the file first).
//
// Tensors are converted on demand (read<T>) to float, half or bfloat16 —
// exactly for F32/F16/BF16 to f32 and for a dtype to itself; narrowing
// rounds to nearest even as the dtype's cast does — and optionally
// transposed on the way (a checkpoint's [out, in] linear weight into the
// [in, out] a gemm reads as B), with no intermediate copy.
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/core/file.hpp"
#include "kforge/core/json.hpp"
#include "kforge/core/json_read.hpp"
#include "kforge/core/tensor.hpp"
#include "kforge/model/weights.hpp"

namespace kforge::model {

/// A checkpoint (safetensors, config.json, index) that is missing, corrupt,
/// or describes something kforge cannot load. what() names the file and
/// the tensor or field.
class checkpoint_error : public file_error {
 public:
  using file_error::file_error;
};

/// A read-only private mapping of a whole regular file.
class mapped_file {
 public:
  mapped_file() = default;
  explicit mapped_file(const std::filesystem::path& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) throw checkpoint_error("kforge: cannot open '" + path.string() + "': " + std::strerror(errno));
    struct stat st {};
    const bool ok = ::fstat(fd, &st) == 0;
    const int err = errno;
    if (!ok || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw checkpoint_error("kforge: '" + path.string() + "' " +
                             (ok ? std::string("is not a regular file (") + kforge::detail::file_kind(st.st_mode) + ")"
                                 : std::string("cannot be read: ") + std::strerror(err)));
    }
    size_ = static_cast<std::size_t>(st.st_size);
    if (size_ > 0) {
      void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        const int e = errno;
        ::close(fd);
        throw checkpoint_error("kforge: cannot map '" + path.string() + "': " + std::strerror(e));
      }
      data_ = static_cast<const std::byte*>(p);
    }
    ::close(fd);
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  mapped_file(mapped_file&& o) noexcept { *this = std::move(o); }
  mapped_file& operator=(mapped_file&& o) noexcept {
    if (this != &o) {
      unmap();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      path_ = std::move(o.path_);
    }
    return *this;
  }
  ~mapped_file() { unmap(); }

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  void unmap() {
    if (data_) ::munmap(const_cast<std::byte*>(data_), size_);
    data_ = nullptr;
  }
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  std::filesystem::path path_;
};

/// The element types safetensors names; kforge converts F32, F16 and BF16.
enum class st_dtype : std::uint8_t { f64, f32, f16, bf16, i64, i32, i16, i8, u8, boolean, f8_e4m3, f8_e5m2 };

struct st_dtype_info {
  st_dtype t;
  std::string_view name;
  std::size_t size;
};
inline constexpr st_dtype_info st_dtypes[] = {
    {st_dtype::f64, "F64", 8},  {st_dtype::f32, "F32", 4},     {st_dtype::f16, "F16", 2},         {st_dtype::bf16, "BF16", 2},
    {st_dtype::i64, "I64", 8},  {st_dtype::i32, "I32", 4},     {st_dtype::i16, "I16", 2},         {st_dtype::i8, "I8", 1},
    {st_dtype::u8, "U8", 1},    {st_dtype::boolean, "BOOL", 1}, {st_dtype::f8_e4m3, "F8_E4M3", 1}, {st_dtype::f8_e5m2, "F8_E5M2", 1}};
inline const st_dtype_info& st_info(st_dtype t) { return st_dtypes[static_cast<int>(t)]; }

/// The product of a file tensor's extents (checked by its reader not to overflow).
inline std::int64_t numel_of(const std::vector<std::int64_t>& dims) {
  std::int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}
/// "[2, 3]"
inline std::string extents_text(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

/// One tensor of a safetensors file: its bytes lie in the mapping.
struct st_tensor {
  std::string name;
  st_dtype dtype = st_dtype::f32;
  std::vector<std::int64_t> dims;
  std::span<const std::byte> bytes;
  std::int64_t numel() const { return numel_of(dims); }
  std::string dims_text() const { return extents_text(dims); }
};

/// The largest header the reference reader accepts.
inline constexpr std::uint64_t safetensors_max_header = 100'000'000;

/// A safetensors file, mapped and its header checked (see the file's comment).
class safetensors_file {
 public:
  explicit safetensors_file(const std::filesystem::path& path) : map_(path) { parse(); }

  const std::filesystem::path& path() const { return map_.path(); }
  const std::vector<st_tensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const st_tensor* find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? nullptr : &tensors_[it->second];
  }
  std::size_t file_bytes() const { return map_.bytes().size(); }

 private:
  [[noreturn]] void fail(const std::string& why) const {
    throw checkpoint_error("kforge: safetensors file '" + path().string() + "': " + why);
  }
  void parse() {
    const auto all = map_.bytes();
    if (all.size() < 8) fail("is " + std::to_string(all.size()) + " bytes, shorter than the 8-byte header length");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<std::uint8_t>(all[static_cast<std::size_t>(i)]);
    if (n > safetensors_max_header) fail("header length " + std::to_string(n) + " is over the format's 100 MB limit");
    if (n > all.size() - 8)
      fail("header length " + std::to_string(n) + " runs past the file's " + std::to_string(all.size()) + " bytes (truncated?)");
    const std::string_view text(reinterpret_cast<const char*>(all.data()) + 8, static_cast<std::size_t>(n));
    const auto data = all.subspan(8 + static_cast<std::size_t>(n));
    json_value header;
    try {
      header = parse_json(text, "header");
    } catch (const json_error& e) {
      fail(e.what());
    }
    if (!header.is_object()) fail("header is " + std::string(json_value::kind_name(header.type())) + ", not an object");
    struct span_of {
      std::uint64_t begin, end;
      std::size_t tensor;
    };
    std::vector<span_of> spans;
    try {
      for (const auto& [name, v] : header.members("header")) {
        if (name == "__metadata__") {
          for (const auto& [k, s] : v.members("__metadata__")) metadata_[k] = s.as_string("__metadata__." + k);
          continue;
        }
        const std::string what = "tensor '" + name + "'";
        if (v.members(what).size() != 3 || !v.find("dtype", what) || !v.find("shape", what) || !v.find("data_offsets", what))
          fail(what + " must have exactly dtype, shape and data_offsets");
        st_tensor t;
        t.name = name;
        const std::string& dt = v.at("dtype", what).as_string(what + " dtype");
        const auto* info = std::find_if(std::begin(st_dtypes), std::end(st_dtypes), [&](const auto& i) { return i.name == dt; });
        if (info == std::end(st_dtypes)) fail(what + " has unknown dtype \"" + dt + "\"");
        t.dtype = info->t;
        unsigned __int128 bytes = info->size;
        for (const auto& d : v.at("shape", what).items(what + " shape")) {
          const std::int64_t e = d.as_int(what + " shape");
          if (e < 0) fail(what + " has a negative extent " + std::to_string(e));
          t.dims.push_back(e);
          bytes *= static_cast<std::uint64_t>(e);
          if (bytes > data.size()) bytes = static_cast<unsigned __int128>(data.size()) + 1;  // saturate: too big either way
        }
        const auto& off = v.at("data_offsets", what).items(what + " data_offsets");
        if (off.size() != 2) fail(what + " data_offsets must be [begin, end]");
        const std::int64_t b = off[0].as_int(what + " data_offsets"), e = off[1].as_int(what + " data_offsets");
        if (b < 0 || e < b) fail(what + " has data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "]");
        if (static_cast<std::uint64_t>(e) > data.size())
          fail(what + " ends at byte " + std::to_string(e) + " of a data section of " + std::to_string(data.size()) + " bytes");
        if (bytes != static_cast<std::uint64_t>(e - b))
          fail(what + " " + t.dims_text() + " of " + dt + " needs " +
               (bytes > data.size() ? std::string("more bytes than the file holds") : std::to_string(static_cast<std::uint64_t>(bytes)) + " bytes") +
               ", its data_offsets give " + std::to_string(e - b));
        t.bytes = data.subspan(static_cast<std::size_t>(b), static_cast<std::size_t>(e - b));
        spans.push_back({static_cast<std::uint64_t>(b), static_cast<std::uint64_t>(e), tensors_.size()});
        index_[name] = tensors_.size();
        tensors_.push_back(std::move(t));
      }
    } catch (const json_error& e) {
      fail(e.what());
    }
    std::sort(spans.begin(), spans.end(), [](const span_of& a, const span_of& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    std::uint64_t at = 0;
    for (const auto& s : spans) {
      if (s.begin != at)
        fail("tensor '" + tensors_[s.tensor].name + "' starts at byte " + std::to_string(s.begin) + " of the data, expected " +
             std::to_string(at) + (s.begin < at ? " (tensors overlap)" : " (a hole)"));
      at = s.end;
    }
    if (at != data.size())
      fail("the tensors cover " + std::to_string(at) + " of the data section's " + std::to_string(data.size()) + " bytes");
  }

  mapped_file map_;
  std::vector<st_tensor> tensors_;
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

namespace detail {
template <class T>
T load_element(const std::byte* p, st_dtype t) {
  if (t == st_dtype::f32) {
    float v;
    std::memcpy(&v, p, 4);
    return static_cast<T>(v);
  }
  std::uint16_t bits;
  std::memcpy(&bits, p, 2);
  if (t == st_dtype::f16) {
    const half h = Eigen::numext::bit_cast<half>(bits);
    if constexpr (std::is_same_v<T, half>) return h;
    else return static_cast<T>(static_cast<float>(h));
  }
  const bfloat16 h = Eigen::numext::bit_cast<bfloat16>(bits);
  if constexpr (std::is_same_v<T, bfloat16>) return h;
  else return static_cast<T>(static_cast<float>(h));
}
}  // namespace detail

/// Whether read<T> converts tensors of this dtype.
inline bool convertible(st_dtype t) { return t == st_dtype::f32 || t == st_dtype::f16 || t == st_dtype::bf16; }

/// A rectangle of a tensor seen as a matrix [rows, cols] (a 1-D tensor of n:
/// [1, n]): rows [r0, r0 + nr), columns [c0, c0 + nc).
struct st_block {
  std::int64_t r0 = 0, nr = 0, c0 = 0, nc = 0;
};

/// t as a matrix: {rows, cols} (rank 1: {1, n}; rank 2 only otherwise).
inline std::pair<std::int64_t, std::int64_t> matrix_dims(const st_tensor& t) {
  if (t.dims.size() == 1) return {1, t.dims[0]};
  if (t.dims.size() == 2) return {t.dims[0], t.dims[1]};
  throw checkpoint_error("kforge: tensor '" + t.name + "' " + t.dims_text() + " is not a vector or a matrix");
}

/// Copies block b of t into out as T: element (r, c) of the block to
/// out[r·ld + c], or with transpose to out[c·ld + r]. Throws
/// checkpoint_error for a dtype kforge does not convert or a block outside
/// t; the caller sizes out. Tiles of 32×32 (the transpose reads rows in
/// order), rows of tiles spread over the cores.
template <class T>
void read_block(const st_tensor& t, st_block b, T* out, std::size_t ld, bool transpose) {
  if (!convertible(t.dtype))
    throw checkpoint_error("kforge: tensor '" + t.name + "' is " + std::string(st_info(t.dtype).name) +
                           "; kforge loads F32, F16 and BF16 tensors");
  const auto extents = matrix_dims(t);  // not a structured binding: clang 14 cannot capture one in the lambda below
  const std::int64_t rows = extents.first, cols = extents.second;
  if (b.r0 < 0 || b.nr < 0 || b.c0 < 0 || b.nc < 0 || b.r0 + b.nr > rows || b.c0 + b.nc > cols)
    throw checkpoint_error("kforge: tensor '" + t.name + "' " + t.dims_text() + " has no block of rows [" + std::to_string(b.r0) +
                           ", " + std::to_string(b.r0 + b.nr) + ") and columns [" + std::to_string(b.c0) + ", " +
                           std::to_string(b.c0 + b.nc) + ")");
  const std::size_t es = st_info(t.dtype).size;
  const std::byte* src = t.bytes.data();
  constexpr std::int64_t tile = 32;
  detail::parallel_chunks(static_cast<std::size_t>((b.nr + tile - 1) / tile), [&](std::size_t rt) {
    const std::int64_t r_lo = static_cast<std::int64_t>(rt) * tile, r_hi = std::min(b.nr, r_lo + tile);
    for (std::int64_t c_lo = 0; c_lo < b.nc; c_lo += tile)
      for (std::int64_t r = r_lo; r < r_hi; ++r) {
        const std::byte* row = src + static_cast<std::size_t>((b.r0 + r) * cols + b.c0) * es;
        for (std::int64_t c = c_lo, c_hi = std::min(b.nc, c_lo + tile); c < c_hi; ++c) {
          const auto ru = static_cast<std::size_t>(r), cu = static_cast<std::size_t>(c);
          out[transpose ? cu * ld + ru : ru * ld + cu] = detail::load_element<T>(row + cu * es, t.dtype);
        }
      }
  }, 16);
}

/// One tensor to write: its name, dtype (F32, F16, BF16 or I32/I64 for ids),
/// extents and little-endian bytes.
struct st_write_tensor {
  std::string name;
  st_dtype dtype;
  std::vector<std::int64_t> dims;
  std::vector<std::byte> bytes;
};

/// The bytes of a safetensors file holding `tensors` in the order given
/// (header padded with spaces to a multiple of 8, as the reference writer
/// does) and `metadata`.
inline std::string safetensors_bytes(const std::vector<st_write_tensor>& tensors,
                                     const std::map<std::string, std::string>& metadata = {}) {
  json_writer j;
  j.begin_object();
  if (!metadata.empty()) {
    j.key("__metadata__").begin_object();
    for (const auto& [k, v] : metadata) j.key(k).value(v);
    j.end_object();
  }
  std::uint64_t at = 0;
  for (const auto& t : tensors) {
    j.key(t.name).begin_object().key("dtype").value(st_info(t.dtype).name).key("shape").begin_array();
    for (auto d : t.dims) j.value(d);
    j.end_array().key("data_offsets").begin_array().value(at).value(at + t.bytes.size()).end_array().end_object();
    at += t.bytes.size();
  }
  j.end_object();
  std::string header = j.str();
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
  out += header;
  for (const auto& t : tensors) out.append(reinterpret_cast<const char*>(t.bytes.data()), t.bytes.size());
  return out;
}

/// A tensor of T (float, half, bfloat16, std::int32_t, std::int64_t) as st_write_tensor.
template <class T>
st_write_tensor st_tensor_of(std::string name, std::vector<std::int64_t> dims, std::span<const T> values) {
  st_write_tensor t{std::move(name), st_dtype::f32, std::move(dims), {}};
  if constexpr (std::is_same_v<T, float>) t.dtype = st_dtype::f32;
  else if constexpr (std::is_same_v<T, half>) t.dtype = st_dtype::f16;
  else if constexpr (std::is_same_v<T, bfloat16>) t.dtype = st_dtype::bf16;
  else if constexpr (std::is_same_v<T, std::int32_t>) t.dtype = st_dtype::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>) t.dtype = st_dtype::i64;
  else static_assert(sizeof(T) == 0, "st_tensor_of: float, half, bfloat16, int32 or int64");
  t.bytes.resize(values.size_bytes());
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());  // an empty span's data() may be null
  return t;
}

}  // namespace kforge::model

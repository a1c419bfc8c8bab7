// kforge/vulkan/compiler.hpp — GLSL → SPIR-V in process (glslang's C++ API),
// a SPIR-V disk cache keyed by content hash, and the SPIRV-Cross reflection
// check of a module's interface against what the host will bind.
//
// Cache key: FNV-1a 64 of (glslang version, target env, kernel name, defines,
// source). Files live in <cache dir>/spirv/<key>.spv and are written to a
// temporary name and renamed, so concurrent processes never read half a file.
// The cache directory is KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else
// ~/.cache/kforge.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <spirv_cross/spirv_cross.hpp>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kforge/core/file.hpp"
#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/spirv/checker.hpp"

namespace kforge::vulkan {

/// The kforge cache directory (see the header comment).
inline std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("KFORGE_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "kforge";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "kforge";
  return std::filesystem::temp_directory_path() / "kforge-cache";
}

namespace detail {
inline std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}
inline std::string hex64(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
/// Writes bytes to path atomically (core/file.hpp: temporary file removed on
/// failure, then rename; not fsynced: a lost cache file is rebuilt); false
/// when it could not be written.
inline bool write_atomic(const std::filesystem::path& path, const void* data, std::size_t n) {
  try {
    write_file_atomically(path, std::string_view(static_cast<const char*>(data), n), false);
    return true;
  } catch (const cache_error&) {
    return false;
  }
}
/// A binary cache file (SPIR-V, the pipeline cache) under the rule for
/// every file kforge reads (core/file.hpp); anything it refuses — missing,
/// not a regular file, too large, unreadable — is a cache miss: these
/// caches are kforge's own and rebuilt from the source.
inline std::vector<char> read_file(const std::filesystem::path& path) {
  try {
    const auto text = read_regular_file_if_exists(path, file_limits::binary_cache, "the shader cache file");
    if (!text) return {};
    return std::vector<char>(text->begin(), text->end());
  } catch (const file_error&) {
    return {};
  }
}
}  // namespace detail

/// A named GLSL compute source and the defines of one variant; or, for the
/// kernels kforge emits as SPIR-V itself (vulkan/spirv/), their words.
struct shader_variant {
  std::string name;
  std::string source;
  std::vector<std::pair<std::string, std::string>> defines;
  std::vector<std::uint32_t> spirv;  ///< non-empty: this module, checked by spirv::check_module, no GLSL
  /// shader_compiler::cache_key of the fields above where the maker computed it once and
  /// keeps the variant unchanged (detail::make_variant's); empty: computed on each use.
  std::string key;
};

/// What the host binds: storage buffers 0..bindings-1 in set 0, a push-constant
/// block of push_bytes, local_size_x from specialization constant 0 (y = z = 1)
/// and exactly the specialization constant ids listed.
struct kernel_interface {
  std::uint32_t bindings = 0;
  std::uint32_t push_bytes = 0;
  std::vector<std::uint32_t> spec_ids;
};

struct compiler_stats {
  std::uint64_t compiles = 0;     // glslang runs
  std::uint64_t disk_hits = 0;    // modules read from the SPIR-V cache
  std::uint64_t memory_hits = 0;  // modules reused within this process
};

class shader_compiler {
 public:
  explicit shader_compiler(std::filesystem::path dir) : dir_(std::move(dir)) {
    init_glslang();
    // What writers killed mid-write left behind (core/file.hpp).
    remove_orphan_temp_files(dir_ / "spirv");
    remove_orphan_temp_files(dir_ / "pipeline");
  }

  /// SPIR-V for a variant: from memory, from disk, or compiled now. A
  /// variant that carries its SPIR-V is structurally checked once instead.
  std::vector<std::uint32_t> spirv(const shader_variant& v) {
    const std::string key = cache_key(v);
    std::lock_guard lock(mu_);
    if (auto it = memory_.find(key); it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
    if (!v.spirv.empty()) {
      spirv::check_module(v.name, v.spirv);
      memory_.emplace(key, v.spirv);
      return v.spirv;
    }
    const auto path = dir_ / "spirv" / (key + ".spv");
    std::vector<char> bytes = detail::read_file(path);
    std::vector<std::uint32_t> words;
    if (bytes.size() >= 20 && bytes.size() % 4 == 0) {
      words.resize(bytes.size() / 4);
      std::memcpy(words.data(), bytes.data(), bytes.size());
      if (words[0] == 0x07230203u) ++stats_.disk_hits;
      else words.clear();
    }
    if (words.empty()) {
      words = compile(v);
      ++stats_.compiles;
      detail::write_atomic(path, words.data(), words.size() * 4);
    }
    memory_.emplace(key, words);
    return words;
  }

  compiler_stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }
  const std::filesystem::path& directory() const { return dir_; }

  static std::string preamble(const shader_variant& v) {
    std::string p;
    for (const auto& [k, val] : v.defines) p += "#define " + k + " " + val + "\n";
    return p;
  }

  /// Compiles without any cache; throws shader_error with glslang's log.
  /// debug_info adds OpLine (source lines) for checks that report them.
  static std::vector<std::uint32_t> compile(const shader_variant& v, bool debug_info = false) {
    init_glslang();  // callers without a context (interface tests) too: an uninitialised glslang fails with an empty log
    glslang::TShader sh(EShLangCompute);
    const char* src = v.source.c_str();
    sh.setStrings(&src, 1);
    const std::string pre = preamble(v);
    sh.setPreamble(pre.c_str());
    sh.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
    sh.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_1);
    sh.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_3);
    const auto msgs = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
    auto fail = [&](const char* stage, const char* log) {
      std::string d;
      for (const auto& [k, val] : v.defines) d += (d.empty() ? "" : " ") + k + "=" + val;
      throw shader_error("kforge::vulkan: GLSL " + std::string(stage) + " of shader '" + v.name + "' (defines: " +
                         (d.empty() ? "none" : d) + ") failed:\n" + log);
    };
    if (!sh.parse(GetDefaultResources(), 450, false, msgs)) fail("compilation", sh.getInfoLog());
    glslang::TProgram prog;
    prog.addShader(&sh);
    if (!prog.link(msgs)) fail("link", prog.getInfoLog());
    std::vector<std::uint32_t> out;
    glslang::SpvOptions opt;
    opt.disableOptimizer = false;
    opt.generateDebugInfo = debug_info;
    glslang::GlslangToSpv(*prog.getIntermediate(EShLangCompute), out, &opt);
    return out;
  }

  static std::string cache_key(const shader_variant& v) {
    if (!v.key.empty()) return v.key;
    if (!v.spirv.empty())
      return detail::hex64(detail::fnv1a(std::string_view(reinterpret_cast<const char*>(v.spirv.data()), v.spirv.size() * 4),
                                         detail::fnv1a("kforge-spirv\n" + v.name)));
    std::uint64_t h = detail::fnv1a(GLSLANG_VERSION_STRING_KFORGE());
    h = detail::fnv1a("vulkan1.1/spv1.3\n", h);
    h = detail::fnv1a(v.name + "\n" + preamble(v), h);
    h = detail::fnv1a(v.source, h);
    return detail::hex64(h);
  }

 private:
  static void init_glslang() {
    static std::once_flag once;
    std::call_once(once, [] { glslang::InitializeProcess(); });
  }
  static std::string GLSLANG_VERSION_STRING_KFORGE() {
    const auto gv = glslang::GetVersion();
    return "glslang " + std::to_string(gv.major) + "." + std::to_string(gv.minor) + "." + std::to_string(gv.patch);
  }

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::vector<std::uint32_t>> memory_;
  compiler_stats stats_;
};

namespace detail {
/// Whether a SPIR-V module declares a cooperative-matrix capability
/// (CooperativeMatrixNV 5357 or CooperativeMatrixKHR 6022).
inline bool uses_coopmat(const std::vector<std::uint32_t>& spirv) {
  for (std::size_t i = 5; i < spirv.size();) {
    const std::uint32_t op = spirv[i] & 0xffffu, wc = spirv[i] >> 16;
    if (op == 17 && wc >= 2 && (spirv[i + 1] == 5357 || spirv[i + 1] == 6022)) return true;  // OpCapability
    if (!wc) break;
    i += wc;
  }
  return false;
}
/// The interface check for modules SPIRV-Cross cannot parse (Debian's 2021
/// release predates the cooperative-matrix extensions): storage-buffer bindings in
/// set 0 and specialization constant ids, read from the decorations. The
/// push-constant size is not checked on this path.
inline void check_interface_by_decorations(const std::string& name, const std::vector<std::uint32_t>& spirv,
                                           const kernel_interface& want) {
  std::vector<std::uint32_t> bindings, sets, ids;
  for (std::size_t i = 5; i + 2 < spirv.size();) {
    const std::uint32_t op = spirv[i] & 0xffffu, wc = spirv[i] >> 16;
    if (!wc) break;
    if (op == 71 && wc >= 4) {  // OpDecorate target decoration literal
      if (spirv[i + 2] == 1) ids.push_back(spirv[i + 3]);       // SpecId
      if (spirv[i + 2] == 33) bindings.push_back(spirv[i + 3]);  // Binding
      if (spirv[i + 2] == 34) sets.push_back(spirv[i + 3]);      // DescriptorSet
    }
    i += wc;
  }
  std::sort(bindings.begin(), bindings.end());
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint32_t> want_b(want.bindings), want_ids = want.spec_ids;
  for (std::uint32_t b = 0; b < want.bindings; ++b) want_b[b] = b;
  std::sort(want_ids.begin(), want_ids.end());
  auto list = [](const std::vector<std::uint32_t>& v) {
    std::string s = "{";
    for (auto x : v) s += (s.size() > 1 ? ", " : "") + std::to_string(x);
    return s + "}";
  };
  if (bindings != want_b || std::any_of(sets.begin(), sets.end(), [](std::uint32_t x) { return x != 0; }))
    throw interface_error("kforge::vulkan: interface of shader '" + name + "' does not match the host: bindings " +
                          list(bindings) + " (set 0 expected), host expects " + list(want_b));
  if (ids != want_ids)
    throw interface_error("kforge::vulkan: interface of shader '" + name +
                          "' does not match the host: specialization constant ids " + list(ids) + ", host expects " +
                          list(want_ids));
}
}  // namespace detail

/// Reflects `spirv` with SPIRV-Cross and throws interface_error when it does
/// not declare exactly the interface the host expects.
inline void check_interface(const std::string& name, const std::vector<std::uint32_t>& spirv,
                            const kernel_interface& want) {
  if (detail::uses_coopmat(spirv)) return detail::check_interface_by_decorations(name, spirv, want);
  spirv_cross::Compiler comp(spirv);
  const auto res = comp.get_shader_resources();
  auto fail = [&](const std::string& what, const std::string& shader_side, const std::string& host_side) {
    throw interface_error("kforge::vulkan: interface of shader '" + name + "' does not match the host: " + what +
                          ": shader declares " + shader_side + ", host expects " + host_side);
  };
  std::vector<bool> seen(want.bindings, false);
  for (const auto& sb : res.storage_buffers) {
    const auto set = comp.get_decoration(sb.id, spv::DecorationDescriptorSet);
    const auto b = comp.get_decoration(sb.id, spv::DecorationBinding);
    if (set != 0 || b >= want.bindings || seen[b])
      fail("storage buffer '" + sb.name + "'", "set " + std::to_string(set) + " binding " + std::to_string(b),
           "set 0 bindings 0.." + std::to_string(static_cast<int>(want.bindings) - 1) + ", each once");
    seen[b] = true;
  }
  for (std::uint32_t b = 0; b < want.bindings; ++b)
    if (!seen[b])
      fail("storage buffers", std::to_string(res.storage_buffers.size()) + " bindings (binding " + std::to_string(b) + " missing)",
           std::to_string(want.bindings) + " bindings");
  const std::size_t other = res.uniform_buffers.size() + res.sampled_images.size() + res.storage_images.size() +
                            res.separate_images.size() + res.separate_samplers.size();
  if (other) fail("descriptors", std::to_string(other) + " non-storage-buffer resources", "storage buffers only");
  std::uint32_t push = 0;
  if (!res.push_constant_buffers.empty())
    push = static_cast<std::uint32_t>(comp.get_declared_struct_size(comp.get_type(res.push_constant_buffers[0].base_type_id)));
  if (push != want.push_bytes)
    fail("push constants", std::to_string(push) + " bytes", std::to_string(want.push_bytes) + " bytes");
  spirv_cross::SpecializationConstant wx, wy, wz;
  comp.get_work_group_size_specialization_constants(wx, wy, wz);
  const std::uint32_t ly = comp.get_execution_mode_argument(spv::ExecutionModeLocalSize, 1);
  const std::uint32_t lz = comp.get_execution_mode_argument(spv::ExecutionModeLocalSize, 2);
  if (wx.id == 0 || wx.constant_id != 0 || wy.id != 0 || wz.id != 0 || ly != 1 || lz != 1)
    fail("local size", wx.id ? "local_size_x_id = " + std::to_string(wx.constant_id) : std::string("a literal local_size_x"),
         "local_size_x_id = 0 and local_size_y = local_size_z = 1");
  std::vector<std::uint32_t> ids;
  for (const auto& sc : comp.get_specialization_constants()) ids.push_back(sc.constant_id);
  std::sort(ids.begin(), ids.end());
  std::vector<std::uint32_t> want_ids = want.spec_ids;
  std::sort(want_ids.begin(), want_ids.end());
  if (ids != want_ids) {
    auto list = [](const std::vector<std::uint32_t>& v) {
      std::string s = "{";
      for (auto i : v) s += (s.size() > 1 ? ", " : "") + std::to_string(i);
      return s + "}";
    };
    fail("specialization constant ids", list(ids), list(want_ids));
  }
}

}  // namespace kforge::vulkan

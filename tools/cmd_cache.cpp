// tools/cmd_cache.cpp — `kforge cache list|show|clear`: what the tuning cache
// holds (include/kforge/tune/cache.hpp, docs/TUNING.md).
//
//   list    one line per entry (device, op, dtype, bucket → candidate)
//   show    every field of every entry, or of the entries this machine would
//           use for --op/--shape/--dtype (one per device: the CPU, and the
//           Vulkan device where there is one)
//   clear   removes every entry (or those whose device contains --device)
// Exit codes: 0 ok, 1 `show` for a problem with no entry, 2 usage, 3 the
// cache directory cannot be read or written.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/tune/cache.hpp>
#include <kforge/validate/problem.hpp>

#include "cli.hpp"
#if defined(KFORGE_HAS_VULKAN)
#include <kforge/tune/vulkan_space.hpp>
#endif

namespace kforge::tool {
namespace {
void entry_json(json_writer& w, const tune::cache_entry& e) {
  w.begin_object().key("key").begin_object().field("device", e.key.device).field("driver", e.key.driver);
  w.field("kforge", e.key.kforge).field("op", e.key.op).field("dtype", e.key.dtype).field("bucket", e.key.bucket);
  w.end_object().field("candidate", e.candidate).field("family", e.family).key("config");
  tune::write_config(w, e.cfg);
  w.field("shape", e.shape).field("median_s", e.median_s).field("strategy", e.strategy).field("trials", e.trials);
  w.field("tuned_at", e.tuned_at).end_object();
}

/// The devices of this machine that tuning entries can be for: the CPU, and
/// the Vulkan device where there is one (the one `kforge tune --policy
/// vulkan` and policy::autotune use).
std::vector<tune::device_identity> local_devices() {
  std::vector<tune::device_identity> ids{tune::cpu_identity()};
#if defined(KFORGE_HAS_VULKAN)
  try {
    ids.push_back(tune::vulkan_identity(vulkan::default_context()));
  } catch (const std::exception&) {  // no Vulkan device: its entries cannot be used here
  }
#endif
  return ids;
}
}  // namespace

int cmd_cache(const std::string& sub, const std::map<std::string, std::string>& values,
              const std::vector<std::string>& flags) {
  const bool json = std::find(flags.begin(), flags.end(), "json") != flags.end();
  try {
    if (sub != "list" && sub != "show" && sub != "clear")
      throw argument_error(sub.empty() ? "cache needs a subcommand: list, show or clear"
                                       : "unknown cache subcommand '" + sub + "' (list, show, clear)");
    for (const auto& [k, v] : values)
      if (k != "op" && k != "shape" && k != "dtype" && k != "device")
        throw argument_error("--" + k + " does not apply to kforge cache");
    tune::tuning_cache cache;
    if (sub == "clear") {
      const std::string dev = values.count("device") ? values.at("device") : "";
      const std::size_t n = cache.clear(dev);
      if (json) {
        json_writer w;
        w.begin_object().field("cleared", static_cast<std::int64_t>(n)).field("cache_file", cache.file().string());
        w.end_object();
        std::cout << w.str() << "\n";
      } else {
        std::cout << "removed " << n << " entries from " << cache.file().string() << "\n";
      }
      return 0;
    }
    std::vector<tune::cache_entry> es = cache.entries();
    bool wanted_one = false;
    if (sub == "show" && values.count("op")) {
      // The entries this machine would use for the problem: one per local device.
      problem p;
      p.op = values.at("op");
      if (!values.count("shape")) throw argument_error("cache show --op needs --shape");
      set_shape(p, values.at("shape"));
      if (values.count("dtype")) p.type = parse_dtype(values.at("dtype"));
      std::vector<tune::cache_key> keys;
      for (const auto& id : local_devices()) keys.push_back(tune::key_for(p, id));
      std::erase_if(es, [&](const tune::cache_entry& e) { return std::find(keys.begin(), keys.end(), e.key) == keys.end(); });
      wanted_one = true;
    }
    if (values.count("device")) {
      const std::string dev = values.at("device");
      std::erase_if(es, [&](const tune::cache_entry& e) { return e.key.device.find(dev) == std::string::npos; });
    }
    if (json) {
      json_writer w;
      w.begin_object().field("cache_file", cache.file().string()).key("entries").begin_array();
      for (const auto& e : es) entry_json(w, e);
      w.end_array().end_object();
      std::cout << w.str() << "\n";
    } else if (sub == "list") {
      std::cout << es.size() << " entries in " << cache.file().string() << "\n";
      for (const auto& e : es)
        std::printf("%-4s %-5s %-16s %-34s %10.4f ms  %s\n", e.key.dtype.c_str(), e.key.op.c_str(), e.key.bucket.c_str(),
                    e.candidate.c_str(), e.median_s * 1e3, e.key.device.c_str());
    } else {
      for (const auto& e : es) {
        std::cout << e.key.op << " " << e.key.dtype << " bucket " << e.key.bucket << "\n"
                  << "  device     " << e.key.device << "\n  driver     " << e.key.driver << "\n  kforge     "
                  << e.key.kforge << "\n  candidate  " << e.candidate << " (" << e.family << ")\n  config     "
                  << tune::config_json(e.cfg) << "\n  tuned on   " << e.shape << ", median " << e.median_s * 1e3
                  << " ms, " << e.strategy << " over " << e.trials << " trials, " << e.tuned_at << "\n";
      }
      if (es.empty()) std::cout << "no entries" << (wanted_one ? " for this problem on this machine's devices" : "") << "\n";
    }
    if (wanted_one && es.empty()) {
      std::cerr << "kforge: no tuning for this problem on this machine's devices (run kforge tune)\n";
      return 1;
    }
    return 0;
  } catch (const cache_error& e) {
    std::cerr << one_line(e.what());
    return 3;
  } catch (const error& e) {
    std::cerr << one_line(e.what());
    return 2;
  }
}

}  // namespace kforge::tool

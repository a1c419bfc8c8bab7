# The Vulkan side of the tool's tuner commands, on the test device (lavapipe
# in CI): entries of `kforge tune --policy vulkan` appear in `kforge cache
# list|show` with their device identity next to the CPU's, and `kforge bench
# --policy vulkan --roofline FILE.svg` reports the Vulkan device's roofline
# (GPU time) and plots its point. Where no Vulkan device exists it says
# "skipped: no Vulkan device" (ctest counts it as skipped).
#   cmake -DTOOL=... -DDIR=... -P tune_cli_vulkan.cmake
file(REMOVE_RECURSE "${DIR}")
set(ENV{KFORGE_CACHE_DIR} "${DIR}")

include("${CMAKE_CURRENT_LIST_DIR}/cli/functions.cmake")

kf(0 devices --json)
if(out MATCHES "\"vulkan_unavailable\"")
  message("skipped: no Vulkan device")
  return()
endif()

# One Vulkan and one CPU entry for the same problem.
kf(0 tune --op gemm --shape 33x17x40 --policy vulkan --strategy halving --trials 3 --reps 2)
kf(0 tune --op gemm --shape 33x17x40 --trials 2 --reps 2)

kf(0 cache list)
expect("${out}" "2 entries" "cache list")
expect("${out}" "vulkan/[a-z_0-9]+/[^\n]*vulkan [^\n]+ \\[[0-9a-f]+:[0-9a-f]+\\]" "cache list (the Vulkan entry and its device)")
expect("${out}" "\n[^\n]*cpu [^\n]+" "cache list (the CPU entry)")
kf(0 cache list --device vulkan)
expect("${out}" "1 entries" "cache list --device vulkan")
kf(0 cache list --json)
expect("${out}" "\"family\":\"vulkan\"" "cache list --json")

# show for a problem: the entries this machine uses, one per device.
kf(0 cache show --op gemm --shape 33x17x40)
expect("${out}" "device     vulkan [^\n]+\\[[0-9a-f]+:[0-9a-f]+\\]" "cache show (Vulkan device identity)")
expect("${out}" "driver     [^\n]*driverVersion 0x" "cache show (Vulkan driver identity)")
expect("${out}" "device     cpu " "cache show (CPU entry)")
expect("${out}" "candidate  vulkan/" "cache show (Vulkan candidate)")
kf(0 cache show --op gemm --shape 33x17x40 --device vulkan --json)
expect("${out}" "\"family\":\"vulkan\"" "cache show --device vulkan --json")
expect_not("${out}" "\"family\":\"cpu\"" "cache show --device vulkan --json")
kf(1 cache show --op gemm --shape 999x3x3)

# bench: the Vulkan row is placed on the Vulkan device's roofline.
kf(0 bench --op gemm --shape 64x64x64 --policy vulkan --reps 2 --roofline ${DIR}/roofline.svg)
expect("${out}" "roofline vulkan [^\n]+: [0-9.]+ GB/s, [0-9.]+ GFLOP/s[^\n]*kforge probes" "bench (Vulkan roofline)")
expect("${out}" "roofline cpu [^\n]+: [0-9.]+ GB/s" "bench (CPU roofline)")
expect("${out}" "\n  vulkan +[0-9.]+% of attainable \\(kernels on device-resident data, GPU timestamps[^\n]*; host-view call [0-9.]+%" "bench (Vulkan fraction)")
expect("${out}" "\n  eigen +[0-9.]+% of attainable" "bench (eigen fraction)")
if(NOT EXISTS "${DIR}/roofline.svg")
  message(FATAL_ERROR "bench --roofline wrote no ${DIR}/roofline.svg")
endif()
file(READ "${DIR}/roofline.svg" svg)
expect("${svg}" "^<svg" "roofline.svg")
expect("${svg}" "class=\"point roof-[0-9]\"[^\n]*>vulkan</text>" "roofline.svg (the vulkan point)")
expect("${svg}" "class=\"point roof-[0-9]\"[^\n]*>eigen</text>" "roofline.svg (the eigen point)")
expect("${svg}" "Vulkan: vulkan " "roofline.svg (the Vulkan roof in the legend)")
file(READ "${DIR}/roofline.json" roof)
expect("${roof}" "\"device\":\"vulkan [^\"]+\",\"driver\":\"[^\"]*driverVersion" "roofline.json (Vulkan entry)")
expect("${roof}" "\"device\":\"cpu " "roofline.json (CPU entry)")

kf(0 bench --op gemm --shape 64x64x64 --policy vulkan --reps 2 --json)
expect("${out}" "\"kforge_policy\":\"vulkan\"[^}]*\"kforge_time\":\"gpu_kernels_device_resident\"[^}]*\"kforge_fraction_of_roofline\":[0-9.e+-]+" "bench --json (Vulkan row)")
expect("${out}" "\"kforge_rooflines\":\\[[^]]*\"target\":\"vulkan\",\"device\":\"vulkan " "bench --json (Vulkan roofline)")
file(REMOVE_RECURSE "${DIR}")

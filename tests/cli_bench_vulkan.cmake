# The Vulkan rows of `kforge bench` and `kforge demo` on the test device
# (lavapipe in CI), run by cli_autotune.cmake with -DVULKAN=ON (kf, expect,
# json_get: cli/functions.cmake): the kernels timed on device-resident tensors, the
# host-view call and the transfers each labelled; the kernel time is below
# the host-view call, which adds the transfers to the same kernels (a
# property of the two measurements, not a speed target); and --dtype bf16
# through run, validate and bench. Where no Vulkan device exists it says
# "skipped: no Vulkan device".
kf(0 devices --json)
if(out MATCHES "\"vulkan_unavailable\"")
  message("skipped: no Vulkan device")
  return()
endif()
# The bf16 support `kforge devices` states: bf16 tensors exactly where the device has 16-bit
# storage (else bf16 runs as f32), bf16 gemm on tensor cores only with bf16 tensors.
json_get(storage16 "${out}" "devices --json" vulkan 0 storage_16bit)
json_get(bf16_tensors "${out}" "devices --json" vulkan 0 bf16_tensors)
json_get(bf16_cores "${out}" "devices --json" vulkan 0 bf16_tensor_cores)
if(NOT bf16_tensors STREQUAL storage16 OR (bf16_cores AND NOT bf16_tensors))
  message(FATAL_ERROR "devices --json: bf16_tensors ${bf16_tensors}, bf16_tensor_cores ${bf16_cores}, storage_16bit ${storage16}")
endif()
kf(0 devices)
if(storage16)
  expect("${out}" "\n    bf16: tensors yes \\(16-bit storage, f32 arithmetic\\), gemm on tensor cores (yes|no)" "devices (bf16)")
else()
  expect("${out}" "\n    bf16: tensors no \\(no 16-bit storage: bf16 data runs as f32\\)" "devices (bf16)")
endif()
kf(0 bench --op gemm --shape 64x48x40 --policy autotune,threaded,vulkan --reps 3)
expect("${out}" "\nvulkan +[0-9.]+ +[0-9.]+ GFLOP/s" "bench (vulkan row)")
expect("${out}" "\nvulkan:host_view +[0-9.]+ " "bench (vulkan host-view row)")
expect("${out}" "\n  vulkan transfers: upload [0-9.]+ ms, download [0-9.]+ ms" "bench (vulkan transfers)")
# A small element-wise op: its kernel is short, so what the host-view call adds
# (staging, two more copies, a submission and a wait per call) is a large
# share of it even on a loaded machine, where lavapipe's timings are noisy.
kf(0 bench --op add --shape 64x100,64x100 --policy vulkan --reps 9 --json)
json_get(name "${out}" "bench --json (vulkan)" benchmarks 1 name)
json_get(kernel "${out}" "bench --json (vulkan)" benchmarks 1 real_time)
json_get(basis "${out}" "bench --json (vulkan)" benchmarks 1 kforge_time)
json_get(host_view "${out}" "bench --json (vulkan)" benchmarks 1 kforge_host_view_ms)
json_get(upload "${out}" "bench --json (vulkan)" benchmarks 1 kforge_upload_ms)
json_get(download "${out}" "bench --json (vulkan)" benchmarks 1 kforge_download_ms)
json_get(hv_name "${out}" "bench --json (vulkan)" benchmarks 2 name)
json_get(hv_time "${out}" "bench --json (vulkan)" benchmarks 2 real_time)
if(NOT name MATCHES "/vulkan_median$" OR NOT hv_name MATCHES "/vulkan:host_view_median$" OR NOT basis STREQUAL "gpu_kernels_device_resident")
  message(FATAL_ERROR "bench --json (vulkan): names '${name}', '${hv_name}', time basis '${basis}'\n${out}")
endif()
# if(LESS/GREATER/EQUAL) compare the values as floating-point numbers.
foreach(v kernel hv_time upload download)
  string(REGEX REPLACE "e.*" "" mant "${${v}}")
  if(NOT mant MATCHES "^[0-9.]+$" OR NOT ${v} GREATER 0)
    message(FATAL_ERROR "bench --json (vulkan): ${v} is '${${v}}'\n${out}")
  endif()
endforeach()
if(NOT kernel LESS hv_time OR NOT hv_time EQUAL host_view)
  message(FATAL_ERROR "bench --json (vulkan): kernel time ${kernel} ms is not below the host-view call ${hv_time} ms "
                      "(kforge_host_view_ms ${host_view})\n${out}")
endif()
# bf16 on the device: run, validate and bench (its kernels timed on bf16 device tensors).
kf(0 run --op gemm --shape 33x17x9 --dtype bf16 --policy vulkan)
expect("${out}" "bf16 on vulkan" "run --dtype bf16 (vulkan)")
expect("${out}" "within tolerance" "run --dtype bf16 (vulkan)")
kf(0 validate --op attention --shape 1x2x7x16,9 --causal --dtype bf16 --policy vulkan)
expect("${out}" "16/16 cases passed" "validate --dtype bf16 (vulkan)")
kf(0 bench --op layer_norm --shape 33x300 --dtype bf16 --policy vulkan --reps 3)
expect("${out}" "\nvulkan +[0-9.]+ +[0-9.]+ GB/s" "bench --dtype bf16 (vulkan row)")
kf(0 demo --quick --policy vulkan --json)
expect("${out}" "\"policy\":\"vulkan\"[^}]*\"time\":\"gpu_kernels_device_resident\",\"host_view_ms\":[0-9.e+-]+,\"upload_ms\":[0-9.e+-]+,\"download_ms\":[0-9.e+-]+" "demo --json (vulkan row)")
expect("${out}" "\"all_validated\":true" "demo --json (vulkan)")
file(REMOVE_RECURSE "${DIR}")

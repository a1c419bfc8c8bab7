# Finds kforge's dependencies, all from Debian 12's packages. Used both by the
# source tree and by the installed kforgeConfig.cmake, so a consumer resolves
# them the same way. Optional stacks set KFORGE_HAVE_VULKAN / KFORGE_HAVE_LLM
# and create the INTERFACE targets kforge_vulkan_deps / kforge_llm_deps.
include(CMakeFindDependencyMacro)
find_package(Eigen3 3.4 REQUIRED NO_MODULE)
find_package(Threads REQUIRED)

set(KFORGE_HAVE_VULKAN OFF)
find_package(Vulkan QUIET)
find_package(glslang QUIET CONFIG)
find_path(KFORGE_SPIRV_CROSS_INCLUDE spirv_cross/spirv_cross.hpp)
find_library(KFORGE_SPIRV_CROSS_CORE NAMES libspirv-cross-core.a spirv-cross-core)
find_library(KFORGE_SPIRV_CROSS_GLSL NAMES libspirv-cross-glsl.a spirv-cross-glsl)
find_library(KFORGE_SPIRV_CROSS_HLSL NAMES libspirv-cross-hlsl.a spirv-cross-hlsl)
find_library(KFORGE_SPIRV_CROSS_MSL NAMES libspirv-cross-msl.a spirv-cross-msl)
find_library(KFORGE_SPIRV_CROSS_REFLECT NAMES libspirv-cross-reflect.a spirv-cross-reflect)
if(Vulkan_FOUND AND glslang_FOUND AND KFORGE_SPIRV_CROSS_INCLUDE AND KFORGE_SPIRV_CROSS_CORE
   AND KFORGE_SPIRV_CROSS_GLSL AND KFORGE_SPIRV_CROSS_REFLECT)
  set(KFORGE_HAVE_VULKAN ON)
  if(NOT TARGET kforge_vulkan_deps AND NOT TARGET kforge::kforge_vulkan_deps)
    add_library(kforge_vulkan_deps INTERFACE)
    target_include_directories(kforge_vulkan_deps INTERFACE ${KFORGE_SPIRV_CROSS_INCLUDE})
    target_link_libraries(kforge_vulkan_deps INTERFACE Vulkan::Vulkan glslang::glslang glslang::SPIRV
      glslang::glslang-default-resource-limits
      ${KFORGE_SPIRV_CROSS_MSL} ${KFORGE_SPIRV_CROSS_HLSL} ${KFORGE_SPIRV_CROSS_REFLECT}
      ${KFORGE_SPIRV_CROSS_GLSL} ${KFORGE_SPIRV_CROSS_CORE})
  endif()
endif()

set(KFORGE_HAVE_LLM OFF)
find_package(CURL QUIET)
find_package(simdjson QUIET CONFIG)
# kforge::tune parses its cache with simdjson; it needs nothing else.
set(KFORGE_HAVE_TUNE OFF)
if(simdjson_FOUND)
  set(KFORGE_HAVE_TUNE ON)
  if(NOT TARGET kforge_tune_deps AND NOT TARGET kforge::kforge_tune_deps)
    add_library(kforge_tune_deps INTERFACE)
    target_link_libraries(kforge_tune_deps INTERFACE simdjson::simdjson)
  endif()
endif()
if(CURL_FOUND AND simdjson_FOUND)
  set(KFORGE_HAVE_LLM ON)
  if(NOT TARGET kforge_llm_deps AND NOT TARGET kforge::kforge_llm_deps)
    add_library(kforge_llm_deps INTERFACE)
    target_link_libraries(kforge_llm_deps INTERFACE CURL::libcurl simdjson::simdjson)
  endif()
endif()

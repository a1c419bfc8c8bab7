#!/usr/bin/env bash
# Installs everything kforge needs from Debian 12's packages. Idempotent: a
# second run installs nothing new. Runs apt-get as root (or through sudo).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  clang                                          # tests: kforge's headers warning-free under Clang too
  libeigen3-dev                                  # reference + CPU interop
  libvulkan-dev mesa-vulkan-drivers vulkan-tools vulkan-validationlayers  # Vulkan + lavapipe
  glslang-dev glslang-tools                      # GLSL -> SPIR-V in process
  libspirv-cross-c-shared-dev spirv-cross        # SPIRV-Cross (static C++ libs + headers)
  libcurl4-openssl-dev libsimdjson-dev           # kernel generation: HTTP + JSON
  doctest-dev libbenchmark-dev libopenblas-dev   # tests and benchmarks
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"

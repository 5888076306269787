#!/usr/bin/env bash
# Installs the build dependencies that are missing: apt on Debian/Ubuntu, Homebrew on macOS.
set -euo pipefail

debian_packages=(
  cmake ninja-build g++ pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libpcre2-dev libutf8proc-dev
  libprotobuf-dev protobuf-compiler
  libyaml-cpp-dev libcpp-httplib-dev
  clang libclang-rt-dev
)
# The server's tests drive it with the openai Node client and the chat page in
# headless Chromium; a Node.js from elsewhere (nodesource, nvm) is kept.
command -v npm >/dev/null 2>&1 || debian_packages+=(nodejs npm)
command -v chromium >/dev/null 2>&1 || debian_packages+=(chromium)
# x86 hosts check the NEON kernels under emulation (scripts/neon-check.sh).
[ "$(uname -m)" = x86_64 ] && debian_packages+=(g++-aarch64-linux-gnu qemu-user)
brew_packages=(cmake ninja pkg-config googletest google-benchmark nlohmann-json cli11 fmt pcre2 utf8proc protobuf yaml-cpp cpp-httplib node llvm)

if command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  missing=()
  for p in "${debian_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
  fi
elif command -v brew >/dev/null 2>&1; then
  for p in "${brew_packages[@]}"; do
    brew list --formula "$p" >/dev/null 2>&1 || brew install "$p"
  done
else
  echo "install-deps: neither apt-get nor brew found; install these by hand: ${debian_packages[*]}" >&2
  exit 1
fi

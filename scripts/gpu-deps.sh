#!/usr/bin/env bash
# Run on a machine with network access (not on the GPU machine): fetches the Debian packages the
# build needs that the GPU machine lacks (fmt, nlohmann-json, CLI11, GoogleTest) and unpacks them
# under .deps/root, plus cuDNN's headers under .deps/root/cudnn/include (the GPU machine may have
# cuDNN's libraries only, from the nvidia-cudnn Python package). .deps is ignored by git; pass it
# along with the working tree (it is a few MiB). scripts/gpu-check.sh picks it up.
# oneDNN is left out on purpose (about 40 MiB): the GPU check builds without it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=$root/.deps
packages=(libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev)

rm -rf "$deps"
mkdir -p "$deps/debs" "$deps/root"
chmod 777 "$deps/debs"  # apt-get download drops privileges to _apt where it can
echo "gpu-deps: downloading ${packages[*]}" >&2
(cd "$deps/debs" && apt-get download "${packages[@]}")
for deb in "$deps"/debs/*.deb; do
  dpkg -x "$deb" "$deps/root"
done
ls "$deps/debs" >"$deps/packages.txt"
rm -rf "$deps/debs" "$deps/root/usr/share/doc" "$deps/root/usr/share/lintian"

cudnn_headers=""
for dir in "${CUDNN_ROOT:-}/include" /usr/local/cuda/include /usr/include /usr/include/x86_64-linux-gnu; do
  if [ -f "$dir/cudnn.h" ]; then
    cudnn_headers=$dir
    break
  fi
done
if [ -n "$cudnn_headers" ]; then
  mkdir -p "$deps/root/cudnn/include"
  cp "$cudnn_headers"/cudnn*.h "$deps/root/cudnn/include/"
  echo "gpu-deps: cuDNN headers from $cudnn_headers" >&2
else
  echo "gpu-deps: warning: no cudnn.h found here; the GPU build will need cuDNN headers of its own" >&2
fi

size_kib=$(du -sk "$deps" | cut -f1)
echo "gpu-deps: $deps holds $((size_kib / 1024)) MiB" >&2
if [ "$size_kib" -gt $((40 * 1024)) ]; then
  echo "gpu-deps: error: more than 40 MiB: too large to travel with the working tree" >&2
  exit 1
fi

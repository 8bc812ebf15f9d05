# Shared by the entry-point scripts: configure and build truepeak into a build directory.
# Usage: truepeak_build BUILD_DIR [extra cmake arguments...]

truepeak_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

truepeak_build() {
  local build_dir=$1
  shift
  local root
  root=$(truepeak_root)
  # The CUDA backend builds wherever the toolkit is installed, GPU or not.
  if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
    export CUDACXX=/usr/local/cuda/bin/nvcc
  fi
  local jobs
  jobs=$(nproc)
  mkdir -p "$build_dir"
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >"$build_dir/configure.log" 2>&1 || {
    cat "$build_dir/configure.log" >&2
    echo "truepeak: configure failed (log above)" >&2
    return 1
  }
  grep -E "^-- truepeak:" "$build_dir/configure.log" >&2 || true
  cmake --build "$build_dir" -j "$jobs"
}

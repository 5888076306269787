#!/usr/bin/env bash
# Checks that no file under src/ includes a header of a folder that comes later
# in the pipeline: the order of the modules in CMakeLists.txt, each one a folder
# of src/ (anelm_kernels_module() is src/kernels/). Prints every include that
# runs against it and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."

order=$(sed -nE 's/^anelm_module\( *[a-z_]+ +([a-z_/]+).*/\1/p; s/^anelm_kernels_module\(\).*/kernels/p' \
          CMakeLists.txt)
if [ -z "$order" ]; then
  echo "check-layers: no anelm_module lines in CMakeLists.txt" >&2
  exit 1
fi

grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]+/' src --include='*.h' --include='*.cpp' |
  awk -v order="$order" '
    BEGIN { n = split(order, folder, "\n") }
    # The position of the folder a path under src/ belongs to (the longest
    # module folder it starts with), or 0.
    function rank(path,   i, best, len) {
      best = 0; len = 0
      for (i = 1; i <= n; i++)
        if (index(path "/", folder[i] "/") == 1 && length(folder[i]) > len) {
          best = i; len = length(folder[i])
        }
      return best
    }
    {
      split($0, part, ":")
      file = part[1]; line = part[2]
      match($0, /"[^"]+"/)
      header = substr($0, RSTART + 1, RLENGTH - 2)
      from = rank(substr(file, 5)); to = rank(header)
      if (from && to > from) {
        printf "%s:%s: includes \"%s\": %s/ comes before %s/ in CMakeLists.txt\n",
               file, line, header, folder[from], folder[to]
        bad = 1
      }
    }
    END { exit bad }'

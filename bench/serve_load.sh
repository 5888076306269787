#!/usr/bin/env bash
# Starts `anelm serve MODEL SERVE_ARGS...` on a free port, runs bench/serve_load.mjs
# against it (1, 4 and 8 concurrent streams, then a two-turn chat on a long
# history) with the server's memory read before and after, and stops it.
#   bench/serve_load.sh BUILD/anelm MODEL [SERVE_ARGS...]   (LOAD_ARGS for the .mjs)
set -euo pipefail
anelm=$1
model=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
port=$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
"$anelm" serve "$model" --port "$port" "$@" &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
until curl -sf "http://127.0.0.1:$port/health" >/dev/null; do
  kill -0 $pid 2>/dev/null || { echo "serve_load: the server exited" >&2; exit 1; }
  sleep 1
done
# shellcheck disable=SC2086
node "$here/serve_load.mjs" --url "http://127.0.0.1:$port" --pid "$pid" ${LOAD_ARGS:-}

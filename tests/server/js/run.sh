#!/usr/bin/env bash
# Runs the server's JavaScript tests: installs the openai, @anthropic-ai/sdk and
# ollama clients and puppeteer-core from the npm registry into BUILD/server-js, writes
# a tiny model there, then `node --test`. Exits 77 (skipped) when Node.js or
# the registry is missing, except under CI, where that is a failure.
set -euo pipefail
anelm=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)

skip() {
  if [ -n "${CI:-}" ]; then echo "server-js: $1" >&2; exit 1; fi
  echo "server-js: skipped: $1" >&2
  exit 77
}

command -v node >/dev/null 2>&1 || skip "node is not installed (scripts/install-deps.sh installs it)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (scripts/install-deps.sh installs it)"
mkdir -p "$work"
cp "$here/package.json" "$work/package.json"
[ -f "$here/package-lock.json" ] && cp "$here/package-lock.json" "$work/package-lock.json"
if [ ! -d "$work/node_modules/openai" ] || [ ! -d "$work/node_modules/@anthropic-ai/sdk" ] ||
   [ ! -d "$work/node_modules/ollama" ] ||
   [ ! -d "$work/node_modules/puppeteer-core" ]; then
  (cd "$work" && npm install --no-audit --no-fund --loglevel=error >/dev/null) ||
    skip "npm install failed (no registry?)"
fi
"$anelm" synth tiny-qwen3 -o "$work/tiny-qwen3" --force >/dev/null

# ES modules find packages beside them, so the tests run from the work folder.
cp "$here"/*.mjs "$work/"
export ANELM_BIN="$anelm" ANELM_TEST_MODEL="$work/tiny-qwen3"
cd "$work"
exec node --test --test-concurrency=1 ./*.test.mjs

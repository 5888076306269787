#!/usr/bin/env bash
# Renders an HTML report (anelm doctor --report, anelm plan --svg) in headless
# Chromium and saves a screenshot, to check that it reads well in a real browser.
#
#   scripts/check-report.sh REPORT.html [SHOT.png]
#
# Chromium: apt install chromium (Debian), or Google Chrome on macOS
# (CHROMIUM=/Applications/Google\ Chrome.app/Contents/MacOS/Google\ Chrome).
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 ]]; then
    sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
report=$(realpath "$1")
shot=${2:-${1%.*}.png}
browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}
[[ -n $browser ]] || { echo "check-report.sh: no Chromium found (apt install chromium)" >&2; exit 1; }
[[ -f $report ]] || { echo "check-report.sh: $1: no such file" >&2; exit 1; }

"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,1300 \
    --screenshot="$shot" "file://$report" 2> /dev/null
[[ -s $shot ]] || { echo "check-report.sh: $browser wrote no screenshot" >&2; exit 1; }
echo "$shot"

#!/usr/bin/env bash
# Refresh the vendored Vega files (reportgen/vendor/vega): the UMD builds of vega, vega-lite and vega-embed from the
# npm registry, unmodified, with their licences, and VERSIONS (file, package, version, sha256).
#   scripts/vendor_vega.sh 6.2.0 6.4.1 7.0.2     # vega, vega-lite, vega-embed
# Then build the example and run the browser tests (tests/test_interactions.py, tests/test_browser*.py).
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: $0 VEGA VEGA_LITE VEGA_EMBED" >&2; exit 2; }
cd "$(dirname "$0")/.."
dest=reportgen/vendor/vega
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack -q "vega@$1" "vega-lite@$2" "vega-embed@$3" >/dev/null)
{
  echo "# Vega, Vega-Lite and vega-embed, vendored (issue 31): the three pinned UMD builds from the npm registry,"
  echo "# unmodified, with their licences (BSD-3-Clause). Refresh with scripts/vendor_vega.sh."
  echo "# file package version sha256"
} > "$tmp/VERSIONS"
for pv in "vega:$1" "vega-lite:$2" "vega-embed:$3"; do
  p=${pv%%:*}; v=${pv##*:}
  mkdir -p "$tmp/$p" && tar xzf "$tmp/$p-$v.tgz" -C "$tmp/$p"
  cp "$tmp/$p/package/build/$p.min.js" "$dest/$p.min.js"
  cp "$tmp/$p/package/LICENSE" "$dest/LICENSE-$p"
  echo "$p.min.js $p $v $(sha256sum "$dest/$p.min.js" | cut -d' ' -f1)" >> "$tmp/VERSIONS"
done
cp "$tmp/VERSIONS" "$dest/VERSIONS"
cat "$dest/VERSIONS"

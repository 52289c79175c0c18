#!/usr/bin/env bash
# Prints the version release.sh and build-image.sh stamp into the binary:
# the newest annotated semantic-version tag reachable from HEAD (v1.4.0;
# a lightweight tag is not a release and is passed over), followed, on
# a commit after it, by git describe's count and commit (v1.4.0-3-gabc1234,
# a semver pre-release of v1.4.0), and -dirty for uncommitted changes;
# without a tag, v0.0.0-dev-gabc1234. Outside a git checkout: v0.0.0-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
if v=$(git describe --match 'v[0-9]*.[0-9]*.[0-9]*' --dirty 2>/dev/null); then
  echo "$v"
elif c=$(git rev-parse --short=7 HEAD 2>/dev/null); then
  dirty=$(git diff --quiet HEAD 2>/dev/null || echo -dirty)
  echo "v0.0.0-dev-g$c$dirty"
else
  echo v0.0.0-dev
fi

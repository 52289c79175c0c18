#!/usr/bin/env bash
# Builds the release into dist/: for linux, darwin and windows on amd64 and
# arm64, one archive each holding the static binary (CGO off) with the
# version and commit stamped, the systemd units, the deploy files (Compose,
# nginx, Caddy, Litestream, the cluster's, the monitoring kit), README.md,
# CHANGELOG.md, LICENSE, docs/ and openapi/openapi.yaml (the README's
# links); the TypeScript client's npm package (petstore-client-X.Y.Z.tgz, its
# own version, with LICENSE); and SHA256SUMS.
# Usage: bash deploy/release.sh [VERSION] (default: deploy/version.sh; a
# VERSION given is a semantic version, v1.4.0). RELEASE_TARGETS (os/arch
# pairs, default the six) and RELEASE_DIST (default dist) narrow a build:
# docs/release_test.go builds the host's platform alone into a temporary
# directory. The archive's files are the docs' promise: the test lists an
# archive against the deploy/ files README.md and docs/*.md name.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(bash deploy/version.sh)}
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$'
[[ $version =~ $semver ]] || { echo "release.sh: $version is not a semantic version (v1.4.0)" >&2; exit 1; }
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
# What each archive carries beside the binary, as the repository lays it out.
files=(README.md CHANGELOG.md LICENSE docs/*.md openapi/openapi.yaml
  deploy/petstore.service deploy/petstore-backup.service deploy/petstore-backup.timer deploy/petstore.service.d/litestream.conf
  deploy/litestream.yml deploy/compose.yaml deploy/.env deploy/Caddyfile deploy/nginx.conf
  deploy/cluster/compose.yaml deploy/cluster/cluster.conf deploy/cluster/nginx.conf deploy/cluster/Caddyfile deploy/cluster/prometheus.yml
  deploy/monitoring/README.md deploy/monitoring/prometheus.yml deploy/monitoring/rules.yml
  deploy/monitoring/rules_test.yml deploy/monitoring/grafana-dashboard.json)
targets=${RELEASE_TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
dist=${RELEASE_DIST:-dist}
rm -rf "${dist:?}" && mkdir -p "$dist"
for target in $targets; do
  os=${target%/*} arch=${target#*/}
  name=petstore_${version}_${os}_${arch}
  exe=petstore; [ "$os" = windows ] && exe=petstore.exe
  mkdir "$dist/$name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=auto \
    -ldflags "-s -w -X petstore/internal/version.Version=$version -X petstore/internal/version.Commit=$commit" -o "$dist/$name/$exe" .
  for f in "${files[@]}"; do
    mkdir -p "$dist/$name/$(dirname "$f")"
    cp "$f" "$dist/$name/$f"
  done
  tar -C "$dist" -czf "$dist/$name.tar.gz" "$name"
  rm -rf "${dist:?}/${name:?}"
done
# The TypeScript client's package, as `npm pack` makes it, from a copy of
# clients/typescript with the repository's LICENSE beside it: npm ci builds
# dist/ there (its "prepare" script), from npm's cache when it holds the
# pinned build tools (CI's npm ci of the client has put them there).
ts_stage=$(mktemp -d)
trap 'rm -rf "$ts_stage"' EXIT
cp -R clients/typescript/package.json clients/typescript/package-lock.json clients/typescript/tsconfig.json \
  clients/typescript/README.md clients/typescript/src clients/typescript/scripts LICENSE "$ts_stage/"
dist_path=$(cd "$dist" && pwd)
(cd "$ts_stage" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >/dev/null &&
  npm pack --ignore-scripts --silent --pack-destination "$dist_path" >/dev/null)
(cd "$dist" && sha256sum ./*.tar.gz ./*.tgz > SHA256SUMS)
echo "$dist/ holds $(ls "$dist" | wc -l) files for $version ($commit)"

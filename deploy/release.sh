#!/usr/bin/env bash
# Builds the release binaries into dist/: linux, darwin and windows on amd64
# and arm64, static (CGO off), with the version stamped, one archive each and
# SHA256SUMS. Usage: bash deploy/release.sh [VERSION] (default: git describe).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
rm -rf dist && mkdir dist
for target in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
  os=${target%/*} arch=${target#*/}
  name=petstore_${version}_${os}_${arch}
  exe=petstore; [ "$os" = windows ] && exe=petstore.exe
  mkdir "dist/$name"
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -buildvcs=auto \
    -ldflags "-s -w -X petstore/internal/version.Version=$version" -o "dist/$name/$exe" .
  cp README.md "dist/$name/"
  tar -C dist -czf "dist/$name.tar.gz" "$name"
  rm -rf "dist/${name:?}"
done
(cd dist && sha256sum ./*.tar.gz > SHA256SUMS)
echo "dist/ holds $(ls dist | wc -l) files for $version"

#!/usr/bin/env bash
# Builds the image localhost/petstore:dev (or $1) offline, with podman or
# docker, whichever is present: the static binary is compiled here and
# copied into an empty base, so no base image is pulled.
set -euo pipefail
cd "$(dirname "$0")/.."
tag=${1:-localhost/petstore:dev}
engine=$(command -v podman || command -v docker || true)
[ -n "$engine" ] || { echo "build-image.sh: neither podman nor docker is installed" >&2; exit 1; }

context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
version=$(bash deploy/version.sh)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
CGO_ENABLED=0 go build -trimpath -buildvcs=auto \
  -ldflags "-s -w -X petstore/internal/version.Version=$version -X petstore/internal/version.Commit=$commit" -o "$context/petstore" .
cp /etc/ssl/certs/ca-certificates.crt "$context/"
mkdir "$context/pb_data" "$context/replica"
# podman builds OCI images by default, which have no HEALTHCHECK: ask for
# Docker's format, which keeps it.
format=()
[ "$(basename "$engine")" = podman ] && format=(--format docker)
# The OCI labels: what the image is, where it comes from, and its licence
# (LICENSE, as an SPDX expression).
labels=(--label "org.opencontainers.image.title=petstore"
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.revision=$commit"
  --label "org.opencontainers.image.source=https://github.com/petstore/petstore"
  --label "org.opencontainers.image.licenses=MIT"
  --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)")
"$engine" build "${format[@]}" "${labels[@]}" -f deploy/Containerfile -t "$tag" "$context"
echo "built $tag ($version)"

#!/usr/bin/env bash
# Runs the image built by build-image.sh with podman, as a self-hoster would,
# on a free loopback port: a key issued inside the container, a create and
# a list through it, a restart that keeps the data, a stop (SIGTERM) that
# exits 0, and the health check. Cleans up after itself. CI runs it.
set -euo pipefail
tag=${1:-localhost/petstore:dev}
name=petstore-test-$$
volume=petstore-test-data-$$
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port

# This sandbox's recipe: no default ulimits, cgroupfs, runc; host network.
conf=$(mktemp)
printf '[containers]\ndefault_ulimits = []\n[engine]\ncgroup_manager = "cgroupfs"\nruntime = "runc"\n' > "$conf"
export CONTAINERS_CONF=$conf
cleanup() {
  podman rm -f "$name" >/dev/null 2>&1 || true
  podman volume rm -f "$volume" >/dev/null 2>&1 || true
  rm -f "$conf"
}
trap cleanup EXIT

# The image keeps its health check (an OCI-format build would drop it).
check=$(podman image inspect -f '{{json .HealthCheck}}' "$tag")
case "$check" in *'"Test":["CMD","/petstore","healthcheck"]'*) ;; *) echo "the image's health check is $check"; exit 1 ;; esac

# The OCI labels name this checkout's version and commit, the source and
# the licence.
label() { podman image inspect -f "{{index .Labels \"org.opencontainers.image.$1\"}}" "$tag"; }
version=$(bash "$(dirname "$0")/version.sh")
commit=$(git -C "$(dirname "$0")" rev-parse HEAD)
[ "$(label version)" = "$version" ] || { echo "label version is $(label version), want $version"; exit 1; }
[ "$(label revision)" = "$commit" ] || { echo "label revision is $(label revision), want $commit"; exit 1; }
[ "$(label source)" = https://github.com/petstore/petstore ] || { echo "label source is $(label source)"; exit 1; }
[ -n "$(label licenses)" ] || { echo "no licenses label"; exit 1; }

# The image's own command, its address from the environment as a
# self-hoster sets it.
run() {
  podman run -d --name "$name" --network host -v "$volume:/pb_data" -e "PETSTORE_HTTP=127.0.0.1:$port" "$tag" >/dev/null
  for _ in $(seq 100); do
    curl -fsS "$base/readyz" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "the container did not become ready:"; podman logs "$name"; return 1
}

run
key=$(podman exec "$name" /petstore keys create --plan free --name ci --dir /pb_data 2>/dev/null | head -1)
case "$key" in pet_*) ;; *) echo "keys create inside the container printed: $key"; exit 1 ;; esac
created=$(curl -fsS -X POST "$base/v1/pets" -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
  -d '{"name":"Rex","categoryId":1}')
id=$(printf '%s' "$created" | sed -E 's/.*"id":([0-9]+).*/\1/')
curl -fsS "$base/v1/pets" -H "Authorization: Bearer $key" | grep -q "\"id\":$id" || { echo "the pet is not listed"; exit 1; }
podman exec "$name" /petstore healthcheck --url "$base" || { echo "healthcheck of the base URL failed"; exit 1; }
# The image's HEALTHCHECK, as podman runs it, probes the address of PETSTORE_HTTP.
podman healthcheck run "$name" || { echo "podman healthcheck run: unhealthy"; podman logs "$name"; exit 1; }

# SIGTERM (podman stop): a clean exit, then the same volume in a new container.
podman stop -t 15 "$name" >/dev/null
status=$(podman inspect -f '{{.State.ExitCode}}' "$name")
[ "$status" = 0 ] || { echo "exit status $status after SIGTERM"; podman logs "$name"; exit 1; }
podman rm "$name" >/dev/null
run
curl -fsS "$base/v1/pets/$id" -H "Authorization: Bearer $key" | grep -q '"name":"Rex"' || { echo "the pet did not survive the restart"; exit 1; }
printed=$(podman exec "$name" /petstore version)
case "$printed" in "petstore $version, commit $commit, "*) ;; *) echo "petstore version printed: $printed"; exit 1 ;; esac
echo "image $tag ($version): labelled, served on PETSTORE_HTTP's port and healthy, key issued inside, create and list, SIGTERM exit 0, data kept across containers"

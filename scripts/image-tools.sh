#!/usr/bin/env bash
# Installs what the tests need to build and run the image (tests/integration/test_image.py): podman, runc
# (crun cannot run on machines whose cgroups are in hybrid mode) and mmdebstrap (the Debian base the build
# starts from, since no container registry is reachable). Idempotent; needs root (or sudo) for apt.
set -euo pipefail

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

missing=()
for tool in podman runc mmdebstrap; do
    command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "==> installing ${missing[*]} for the image's build and run (apt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc mmdebstrap >/dev/null
fi

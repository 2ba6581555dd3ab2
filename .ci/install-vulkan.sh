#!/usr/bin/env bash
# Mesa's software Vulkan driver (lavapipe) so the LiteRT GPU accelerator runs on a host with no GPU.
# Debian bookworm's mesa-vulkan-drivers 22.3 is too old for the accelerator (Dawn rejects it); the
# bookworm-backports build (25.x) works. The backports suite is added to the existing Debian stanza,
# reusing its configured mirror. Idempotent; needs root. Skips quietly where apt is not Debian's.
set -euo pipefail
src=/etc/apt/sources.list.d/debian.sources
if [ ! -f "$src" ]; then
  echo "install-vulkan: $src not found (not Debian bookworm?): install a Mesa >= 24 Vulkan driver yourself" >&2
  exit 0
fi
if ! grep -q "bookworm-backports" "$src"; then
  sed -i '0,/^Suites: bookworm bookworm-updates$/s//Suites: bookworm bookworm-updates bookworm-backports/' "$src"
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq -t bookworm-backports mesa-vulkan-drivers >/dev/null
dpkg-query -W -f='installed ${Package} ${Version}\n' mesa-vulkan-drivers

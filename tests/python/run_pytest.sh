#!/usr/bin/env bash
# Runs one file of the Python suite with pytest: run_pytest.sh PYTHON TEST_FILE. Without the
# virtual environment the file fails under CI and is skipped (exit 77, ctest's skip) elsewhere.
set -uo pipefail
python=$1 test_file=$2
if [[ ! -x $python ]] || ! "$python" -c "import pytest" 2>/dev/null; then
  echo "$python with pytest is missing (run scripts/setup.sh)"
  [[ -n ${CI:-} ]] && exit 1
  exit 77
fi
cd "$(dirname "$test_file")"
# pytest exits 5 when it collects no test: ctest counts that as a failure, as it should be.
exec "$python" -m pytest -q -p no:cacheprovider -rs "$test_file"

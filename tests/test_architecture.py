"""The import layering of STYLE.md section 2, enforced by import-linter (contracts in
pyproject.toml): lower layers never import higher ones, channels stay apart, only the device
source imports adbutils, nothing in perception imports openai, only fastpath imports kernels."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    beside = Path(sys.executable).parent / "lint-imports"
    exe = str(beside) if beside.exists() else shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    result = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert "0 broken" in result.stdout

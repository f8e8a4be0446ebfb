"""Shared fixtures: the fast-path implementations, the real-screen corpus and a pixel reader."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from perception import PixelReader, fastpath

CORPUS_DIR = Path(
    os.environ.get("PERCEPTION_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus")
)
CORPUS_REASON = (
    f"real-screen corpus not found at {CORPUS_DIR} (it lives in ../shared/corpus next to the "
    "checkout, or set PERCEPTION_CORPUS); these tests run in CI"
)


@pytest.fixture(params=sorted(fastpath.available()), ids=lambda name: str(name))
def fastpath_impl(request: pytest.FixtureRequest) -> ModuleType:
    """Each available kernel module: every test using it runs on both twins."""
    return fastpath.available()[request.param]


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    if not CORPUS_DIR.is_dir():
        pytest.skip(CORPUS_REASON)
    return CORPUS_DIR


def corpus_available() -> bool:
    return CORPUS_DIR.is_dir()


requires_corpus = pytest.mark.skipif(not CORPUS_DIR.is_dir(), reason=CORPUS_REASON)


@pytest.fixture(scope="module")
def reader() -> Iterator[PixelReader]:
    """One PixelReader (its OCR models loaded once) for a test module's real screens."""
    with PixelReader() as r:
        yield r


@pytest.fixture(params=sorted(fastpath.available()), ids=lambda name: str(name))
def pipeline_impl(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a pipeline-level test on each implementation: swaps the kernels behind fastpath."""
    monkeypatch.setattr(fastpath, "_impl", fastpath.available()[request.param])
    return str(request.param)


# The adb server and the virtual phone (tests/_adb.py), for every test module that asks.
from _adb import adb_server, phone, sim  # noqa: E402, F401

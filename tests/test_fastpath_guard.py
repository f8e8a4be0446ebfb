import os

import pytest

from perception import fastpath


def test_implementation_matches_request() -> None:
    choice = os.environ.get("PERCEPTION_FASTPATH", "")
    if choice:
        assert fastpath.IMPLEMENTATION == choice
    elif os.environ.get("PERCEPTION_REQUIRE_EXT") == "1":
        assert fastpath.IMPLEMENTATION == "cython"
    assert fastpath.IMPLEMENTATION in fastpath.available()


def test_unknown_implementation_is_refused() -> None:
    with pytest.raises(ImportError):
        fastpath.kernels("fortran")  # type: ignore[arg-type]

"""The one importable face of the kernels.

``PERCEPTION_FASTPATH`` is read once, at import:

- ``python``: force the pure-Python twins (:mod:`perception._fastpath_py`);
- ``cython``: import the compiled extension or raise :class:`FastpathUnavailableError`;
- unset or empty: the extension when it is built, else the twins.

``IMPLEMENTATION`` says which one is live. The wrappers here validate and normalise arrays
(C-contiguous ``int32``), then call the kernel, which assumes clean input. Both twins give
identical results; ``tests/test_fastpath_parity.py`` proves it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Literal

from perception.errors import ConfigError, FastpathUnavailableError

Implementation = Literal["cython", "python"]

_choice = os.environ.get("PERCEPTION_FASTPATH", "").strip().lower()
if _choice not in {"", "python", "cython"}:
    raise ConfigError(f"PERCEPTION_FASTPATH={_choice!r}: expected 'python', 'cython' or unset")


def _load_extension() -> ModuleType | None:
    try:
        return importlib.import_module("perception._fastpath")
    except ImportError:
        return None


if TYPE_CHECKING or _choice == "python":
    from perception import _fastpath_py as _impl

    IMPLEMENTATION: Implementation = "python"
else:
    _ext = _load_extension()
    if _ext is not None:
        _impl = _ext
        IMPLEMENTATION = "cython"
    elif _choice == "cython":
        raise FastpathUnavailableError(
            "PERCEPTION_FASTPATH=cython but perception._fastpath is not built; "
            "reinstall with a C compiler and Cython (PERCEPTION_REQUIRE_EXT=1 makes that fatal)"
        )
    else:
        from perception import _fastpath_py as _impl

        IMPLEMENTATION = "python"


def available() -> dict[str, ModuleType]:
    """Every implementation that can be loaded here, by name (for tests and the bench)."""
    from perception import _fastpath_py

    found: dict[str, ModuleType] = {"python": _fastpath_py}
    ext = _load_extension()
    if ext is not None:
        found["cython"] = ext
    return found


def kernels(name: Implementation | None = None) -> ModuleType:
    """The kernel module in use, or the one named (tests and bench compare both)."""
    if name is None:
        return _impl
    mods = available()
    if name not in mods:
        raise FastpathUnavailableError(f"fastpath implementation {name!r} is not available")
    return mods[name]

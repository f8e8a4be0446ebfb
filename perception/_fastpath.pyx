# cython: language_level=3, cdivision=True, embedsignature=True
"""Compiled kernels. Each has a pure-Python twin in ``perception._fastpath_py`` with identical
results; import them only through :mod:`perception.fastpath`.

Kernels are grouped by channel in ``_kernels_*.pxi`` files included here, so the extension stays
one module (one ``Extension`` in ``setup.py``).
"""

include "_kernels_tree.pxi"
include "_kernels_fusion.pxi"
include "_kernels_pixel.pxi"

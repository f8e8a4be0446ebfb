"""Pure-Python twins of the compiled kernels: the reference semantics and typed signatures.

Each group lives in its own ``_kernels_*_py.py`` module, mirroring the ``_kernels_*.pxi`` files
of the extension. Import them only through :mod:`perception.fastpath`.
"""

from perception._kernels_fusion_py import *  # noqa: F403
from perception._kernels_pixel_py import *  # noqa: F403
from perception._kernels_tree_py import *  # noqa: F403

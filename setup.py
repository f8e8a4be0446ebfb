"""Build policy for the one Cython extension, ``perception._fastpath``.

PERCEPTION_REQUIRE_EXT=1  the extension must build (CI, wheels); a failure is fatal.
PERCEPTION_NO_EXT=1       skip the extension: pure Python.
PERCEPTION_CYTHON_DEBUG=1 keep bounds/wraparound checks on (for parity runs).
Otherwise the extension is optional: a source install without a compiler still works.
"""

import os

from setuptools import Extension, setup

require = os.environ.get("PERCEPTION_REQUIRE_EXT") == "1"
skip = os.environ.get("PERCEPTION_NO_EXT") == "1" and not require
debug = os.environ.get("PERCEPTION_CYTHON_DEBUG") == "1"

ext_modules = []
if not skip:
    try:
        from Cython.Build import cythonize
    except ImportError:
        if require:
            raise
        print("perception: Cython not importable, building pure Python")
    else:
        safety = {"boundscheck": debug, "wraparound": debug, "initializedcheck": debug}
        ext = Extension(
            "perception._fastpath",
            ["perception/_fastpath.pyx"],
            optional=not require,
            extra_compile_args=["-O3"],
        )
        ext_modules = cythonize([ext], compiler_directives=safety, quiet=True)
        print("perception: accelerated (Cython extension)" + (" [debug]" if debug else ""))

setup(ext_modules=ext_modules)

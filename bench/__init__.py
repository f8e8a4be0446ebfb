"""bench: ``perception-bench``, the performance and quality figures (see :mod:`bench.cli`)."""

from perception.errors import PerceptionError


class BenchInputError(PerceptionError):
    """What a bench was given cannot be measured: no corpus folder, a corpus without the files
    the bench reads, a missing tool or package. ``perception-bench`` prints it as one line (its
    type and message) and exits 2, as ``perception`` does for its inputs."""

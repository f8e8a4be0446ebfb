"""Fusion: join the tree and pixel channels into one scored candidate list.

Stages, each its own module: :mod:`~perception.fusion.align` (pair captures by time and epoch),
:mod:`~perception.fusion.score` (tree and pixel confidence), :mod:`~perception.fusion.crossval`
(tree <-> OCR matching), :mod:`~perception.fusion.arbiter` (hysteresis state),
:mod:`~perception.fusion.candidates` (the unified list with stable ids),
:mod:`~perception.fusion.screen` (screen description, fingerprint, recommended operations) and
:mod:`~perception.fusion.loop` (repeated pages). :mod:`perception.pipeline` wires them together.
"""

"""Frames for tests: encode a BGR (or grey) array as the PNG bytes a phone's screencap gives."""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import numpy.typing as npt


def png(img: npt.NDArray[np.uint8] | np.ndarray[Any, Any]) -> bytes:
    ok, buf = cv2.imencode(".png", img)
    assert ok
    return buf.tobytes()

"""The pixel channel: from a screen frame to pixel candidates (OCR + OpenCV anchors)."""

from perception.pixel.anchors import Anchor, PixelKind, find_anchors, repeated_icons
from perception.pixel.flags import FrameFlags, StabilitySignature, frame_flags
from perception.pixel.frame import Frame, FrameLike, check_frame_size, decode_frame, load_frame
from perception.pixel.merge import PixelCandidate, TextBlock, build_candidates, merge_lines
from perception.pixel.ocr import OcrEngine, RapidOcrEngine, TextLine, TextReader
from perception.pixel.read import PixelReader, Pixels, VisionCrop, crop_for_vision, read_pixels

__all__ = [
    "Anchor",
    "Frame",
    "FrameFlags",
    "FrameLike",
    "OcrEngine",
    "PixelCandidate",
    "PixelKind",
    "PixelReader",
    "Pixels",
    "RapidOcrEngine",
    "StabilitySignature",
    "TextBlock",
    "TextLine",
    "TextReader",
    "VisionCrop",
    "build_candidates",
    "check_frame_size",
    "crop_for_vision",
    "decode_frame",
    "find_anchors",
    "frame_flags",
    "load_frame",
    "merge_lines",
    "read_pixels",
    "repeated_icons",
]

"""Stage 1: hardened parse of ``uiautomator dump`` output into a :class:`RawTree`.

What real tools emit is accepted: the XML declaration, leading noise (adb warnings, a shell
prompt), the trailing banner ``UI hierchary dumped to: /dev/tty``, and several windows, whether as
several top-level nodes or several concatenated ``<hierarchy>`` documents. Refused outright:
DOCTYPE/ENTITY declarations, input over the size limit, nesting, node counts (over the whole
dump) or document counts over the limits.
A dump that fails to parse is repaired once (control characters, stray NULs, invalid UTF-8,
surrogates as phones emit them for emoji) and parsed again; if it still fails the error says
what was wrong. A failed dump (``ERROR: could not get idle state.``, ``null root node ...``,
``Killed``, empty or truncated output) is a :class:`DumpFailedError`, never an empty screen; a
genuinely empty ``<hierarchy/>`` is a valid empty tree, but one holding other elements and no
``<node>`` (``<NODE>``, ``<view>``) is a :class:`TreeParseError` naming them.

Appium's page source (the UiAutomator2 driver's ``driver.page_source``) is read as the dump it
is made from: the same attributes, but each element named after its class
(``<android.widget.Button class="android.widget.Button" ...>``, ``$`` turned into ``.``) and
``displayed`` for ``visible-to-user``. A document without a ``<node>`` whose elements carry
dotted names is read so (:data:`_CLASS_TAG`); the class comes from the ``class`` attribute, as
in a dump. Its toast (``<android.widget.Toast>``, no bounds) is dropped and counted as any node
without bounds.

Text in UTF-16 (what Windows PowerShell's ``>`` redirect writes) or with a UTF-8 byte-order
mark is turned into plain UTF-8 here, once, before either twin of the scanner sees it. A dump in
which no node, or not even half of the nodes, has usable ``bounds`` is a
:class:`TreeParseError`, not an empty or near-empty screen; fewer such nodes are dropped and
counted (:attr:`RawTree.unbounded`).
"""

from __future__ import annotations

import codecs
import logging
import os
import re
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.errors import (
    ConfigError,
    DumpFailedError,
    InputError,
    TreeParseError,
    UnsafeXmlError,
)

log = logging.getLogger(__name__)

I32 = npt.NDArray[np.int32]

_HIERARCHY_OPEN = b"<hierarchy"
_AFTER_NAME = frozenset(b" \t\n\r\f\v/>")
"""What may follow the element name in a ``<hierarchy`` start tag (``rb"<hierarchy[\\s/>]"``)."""
_HIERARCHY_END = b"</hierarchy>"
_UNSAFE = re.compile(rb"<!\s*(DOCTYPE|ENTITY|ELEMENT|ATTLIST|NOTATION)", re.IGNORECASE)
_FAILURES = (
    (re.compile(rb"could not get idle state", re.I), "the device was never idle"),
    (re.compile(rb"null root node", re.I), "the accessibility bridge returned no root node"),
    (re.compile(rb"^\s*Killed\b", re.I | re.M), "the dump process was killed"),
    (re.compile(rb"^\s*ERROR\b", re.M), "the dump tool reported an error"),
    (re.compile(rb"Exception|Segmentation fault|Aborted", re.I), "the dump tool crashed"),
)
_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "gzip data"),
    (b"\x7fELF", "an executable"),
)
_EXCERPT_CHARS = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class RawTree:
    """Every ``<node>`` of a dump, in document order, as parallel arrays.

    ``bits`` holds the node's boolean attributes (values of ``ElementFlag``) plus internal bits
    (``fastpath.B_*``). ``strings`` holds 6 strings a node: text, content-desc, resource-id,
    class, package, hint. ``draw`` is ``drawing-order`` or -1.
    """

    rotation: int
    parent: I32
    box_px: I32
    bits: I32
    draw: I32
    class_id: I32
    """Distinct class names numbered in order of first appearance."""
    strings: list[str]
    windows: int
    repaired: bool

    @property
    def count(self) -> int:
        return int(self.parent.shape[0])

    def string(self, node: int, field: int) -> str:
        return self.strings[node * fastpath.NFIELDS + field]

    def window_spans(self) -> list[tuple[int, int]]:
        """Each window's root and the end (exclusive) of its nodes, in document order: a
        window's nodes follow its root up to the next root."""
        roots = np.flatnonzero(self.parent < 0).tolist()
        return list(zip(roots, [*roots[1:], self.count], strict=True)) if roots else []

    @property
    def unbounded(self) -> int:
        """Nodes whose ``bounds`` are missing or unreadable (they have no box and are dropped)."""
        return int(np.count_nonzero((self.bits & fastpath.B_HAS_BOUNDS) == 0))


SYSTEM_UI = "com.android.systemui"
"""The package of the status bar, the navigation bar, the shade and the lock screen."""

DumpSource = bytes | str | os.PathLike[str]
"""What :func:`dump_source` (and so :func:`perception.read_tree`) accepts."""

_BANNER = re.compile(r"UI hierc?hi?ary dumped to", re.I)
_PATH_MAX_CHARS = 4096


def _names_a_file(text: str) -> bool:
    """A str that can only be a file path: one line and no ``<`` (so never XML). One that names
    no file is still the dump when it reads like a failed dump's output (``Killed``,
    ``ERROR: ...``, the "dumped to" banner, blank)."""
    if not 0 < len(text) <= _PATH_MAX_CHARS or "<" in text or not text.isprintable():
        return False
    if os.path.exists(text):
        return True
    return (
        text.strip() != ""
        and _BANNER.search(text) is None
        and _failure(text.encode("utf-8", "surrogatepass")) is None
    )


def read_dump(
    source: str | bytes | BinaryIO, max_input_bytes: int | None = None, *, missing_hint: str = ""
) -> bytes:
    """A dump's bytes from a file path or an open binary stream (standard input), at most twice
    ``max_input_bytes`` (``TreeConfig.max_input_bytes`` unless given; UTF-16 shrinks by up to
    half): a larger or endless input (``/dev/zero``, a pipe that never ends) is an
    :class:`UnsafeXmlError` before it fills the memory, an unreadable one an
    :class:`InputError` naming it (``missing_hint`` added when the file does not exist)."""
    limit = _DEFAULT_CONFIG.max_input_bytes if max_input_bytes is None else max_input_bytes
    name = repr(os.fsdecode(source)) if isinstance(source, str | bytes) else "standard input"
    try:
        if isinstance(source, str | bytes):
            with open(source, "rb") as f:
                data = f.read(2 * limit + 1)
        else:
            data = source.read(2 * limit + 1)
    except OSError as exc:
        hint = missing_hint if isinstance(exc, FileNotFoundError) else ""
        raise InputError(f"cannot read the dump {name}: {exc.strerror or exc}{hint}") from exc
    if len(data) > 2 * limit:
        raise UnsafeXmlError(
            f"the dump {name} holds more than {2 * limit} bytes: over the limit of {limit} "
            "bytes even as UTF-16 (TreeConfig.max_input_bytes, PERCEPTION_TREE_MAX_INPUT_BYTES)"
        )
    return data


def dump_source(xml: object, max_input_bytes: int | None = None) -> bytes | str:
    """The dump's content, whatever names it: read a file path, pass the content through.

    An ``os.PathLike`` is a file path, and so is a one-line ``str`` holding no ``<`` (never XML)
    that is not a failed dump's output (``Killed``, ``ERROR: ...``, empty); such a file that
    cannot be read is an :class:`InputError` naming it. At most twice ``max_input_bytes``
    (``TreeConfig.max_input_bytes`` unless given; UTF-16 shrinks by up to half) are read: a
    larger file, or an endless one (``/dev/zero``), is an :class:`UnsafeXmlError` before it
    fills the memory. ``bytes``, ``bytearray``, ``memoryview`` and any other ``str`` are the
    dump itself and come back unchanged. Anything else (``None``, a number, an open file) is an
    :class:`InputError` saying what is accepted.
    """
    if isinstance(xml, os.PathLike) or (isinstance(xml, str) and _names_a_file(xml)):
        hint = " (a str without '<' is taken for a file path)" if isinstance(xml, str) else ""
        return read_dump(os.fspath(xml), max_input_bytes, missing_hint=hint)
    if isinstance(xml, str | bytes):
        return xml
    if isinstance(xml, bytearray | memoryview):
        return bytes(xml)
    hint = " (read the file first: f.read())" if hasattr(xml, "read") else ""
    raise InputError(
        "a dump is bytes, a str (XML text or a file path) or an os.PathLike, "
        f"not {type(xml).__name__}{hint}"
    )


def _binary(data: bytes) -> str | None:
    """What the input is if it is not text (``"looks like a JPEG image"``), else None.

    Text starts with no known file signature, holds no NUL between its ends and decodes as
    UTF-8 (a character cut at the end of the 4 KiB sample aside).
    """
    for signature, kind in _SIGNATURES:
        if data.startswith(signature):
            return f"looks like {kind}"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "looks like a WebP image"
    sample = data.strip(b" \t\r\n\x00")[:4096]
    if b"\x00" in sample:
        return "holds NUL bytes"
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(sample) - 3:
            return "is not UTF-8 text"
    return None


def _excerpt(data: bytes) -> str:
    """A short, repr-escaped quote of text input for an error message (never raw bytes)."""
    text = data[: _EXCERPT_CHARS * 4].decode("utf-8", "replace")
    cut = text[:_EXCERPT_CHARS]
    return f"{cut!r}..." if len(cut) < len(text) else repr(cut)


def _failure(data: bytes) -> DumpFailedError | None:
    stripped = data.strip(b" \t\r\n\x00")
    if not stripped:
        return DumpFailedError("empty dump output")
    for pattern, meaning in _FAILURES:
        if pattern.search(stripped[:4096]):
            return DumpFailedError(f"{meaning}: {_excerpt(stripped.splitlines()[0])}")
    return None


def _path_hint(data: bytes) -> str:
    """A hint when the bytes name a dump file rather than hold one."""
    text = data.decode("utf-8", "replace").strip()
    if "\n" in text or len(text) > _PATH_MAX_CHARS or not os.path.isfile(text):
        return ""
    return ": these bytes name a file; pass the path as a str or pathlib.Path to read it"


def _hierarchy_starts(data: bytes, max_documents: int | None = None) -> list[int]:
    """Offsets of the ``<hierarchy`` start tags. ``bytes.find`` skips through the dump; a regex
    stops at every ``<`` of it (5 us a median dump, a tenth of the whole parse). More than
    ``max_documents`` of them is an :class:`UnsafeXmlError`, raised at the first one past the
    limit: 16 MiB of ``<hierarchy/>`` are 1.4 million documents, each a scan of its own."""
    starts: list[int] = []
    at = _start_from(data, 0)
    while at >= 0:
        if max_documents is not None and len(starts) >= max_documents:
            raise UnsafeXmlError(
                f"more <hierarchy> documents than the limit of {max_documents} (the next "
                f"starts at byte {at}; a dump has one; TreeConfig.max_documents, "
                "PERCEPTION_TREE_MAX_DOCUMENTS)"
            )
        starts.append(at)
        at = _start_from(data, at + len(_HIERARCHY_OPEN))
    return starts


def _start_from(data: bytes, at: int) -> int:
    """The first ``<hierarchy`` start tag at or after byte ``at`` (its name ended by white
    space, ``/`` or ``>``: not ``<hierarchyx``), or -1."""
    at = data.find(_HIERARCHY_OPEN, at)
    while at >= 0:
        after = at + len(_HIERARCHY_OPEN)
        if after < len(data) and data[after] in _AFTER_NAME:
            return at
        at = data.find(_HIERARCHY_OPEN, after)
    return -1


def _declares(data: bytes) -> bool:
    """Does the input hold a ``<!...`` declaration that :data:`_UNSAFE` refuses? A dump rarely
    holds a ``!`` at all (48 of the corpus's 443 files), and looking for one byte is a
    ``memchr``; looking for ``<!`` stops at every ``<`` (11 us a median dump)."""
    bang = data.find(b"!")
    if bang < 0:
        return False
    return data.find(b"<!", max(0, bang - 1)) >= 0 and _UNSAFE.search(data) is not None


def one_document(data: bytes) -> bytes | None:
    """The dump's one ``<hierarchy>`` document, found without the search for a second one
    that :func:`frame_documents` makes (a multi-byte ``bytes.find`` through the whole dump, 4.6
    us of a median screen's 15 KB), or None where that cannot be told this way. From the first
    ``<hierarchy`` start tag to the last ``</hierarchy>``, when no start tag follows that and
    neither a ``!`` nor a ``?`` follows the first (``memchr``; no comment, CDATA section or
    processing instruction can then hide one): any other ``<hierarchy`` between them is then
    a tag, which the scanner refuses (a second root, or one nested), and the caller frames the
    dump with :func:`frame_documents` instead. So a dump is read as the same documents either
    way."""
    at = _start_from(data, 0)
    if at < 0 or data.find(b"!", at) >= 0 or data.find(b"?", at) >= 0:
        return None
    end = data.rfind(_HIERARCHY_END)
    if end < at or _HIERARCHY_OPEN in data[end:]:
        return None
    return data[at : end + len(_HIERARCHY_END)]


def frame_documents(data: bytes, max_documents: int | None = None) -> list[bytes]:
    """Cut the input into its ``<hierarchy>`` documents, dropping noise and banners; more than
    ``max_documents`` (when given) is an :class:`UnsafeXmlError`."""
    starts = _hierarchy_starts(data, max_documents)
    if not starts:
        binary = _binary(data)
        if binary is not None:
            raise TreeParseError(
                f"not a uiautomator dump: binary data ({binary}), {len(data)} bytes and no "
                "<hierarchy> element"
            )
        failure = _failure(data)
        if failure is not None:
            raise failure
        raise TreeParseError(
            f"no <hierarchy> element in the input (it starts with {_excerpt(data)})"
            + _path_hint(data)
        )
    docs = []
    for k, start in enumerate(starts):
        stop = starts[k + 1] if k + 1 < len(starts) else len(data)
        end = data.rfind(_HIERARCHY_END, start, stop)
        if end >= 0:
            docs.append(data[start : end + len(_HIERARCHY_END)])
            continue
        close = data.find(b">", start, stop)
        if close > 0 and data[close - 1 : close] == b"/":
            docs.append(data[start : close + 1])
            continue
        failure = _failure(data[start:stop])
        if failure is not None and b"<node" not in data[start:stop]:
            raise failure
        raise TreeParseError(
            f"truncated dump: <hierarchy> opened at byte {start} is never closed "
            f"({stop - start} bytes follow it)"
        )
    return docs


_CHAR_REF = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")
_BAD_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _fix_char_refs(text: str) -> str:
    """Combine surrogate pairs written as two char refs; drop refs XML forbids."""

    def value(ref: str) -> int:
        return int(ref[1:], 16) if ref[0] in "xX" else int(ref)

    out: list[str] = []
    pos = 0
    pending_high: int | None = None
    pending_end = -1
    for m in _CHAR_REF.finditer(text):
        out.append(text[pos : m.start()])
        pos = m.end()
        try:
            cp = value(m.group(1))
        except ValueError:
            cp = 0xFFFD
        if pending_high is not None:
            if 0xDC00 <= cp <= 0xDFFF and m.start() == pending_end:
                combined = 0x10000 + ((pending_high - 0xD800) << 10) + (cp - 0xDC00)
                out.append(f"&#{combined};")
                pending_high = None
                continue
            out.append("&#65533;")
            pending_high = None
        if 0xD800 <= cp <= 0xDBFF:
            pending_high = cp
            pending_end = m.end()
            continue
        if 0xDC00 <= cp <= 0xDFFF or cp > 0x10FFFF:
            out.append("&#65533;")
        elif cp < 0x20 and cp not in (0x09, 0x0A, 0x0D):
            out.append(" ")
        elif cp in (0xFFFE, 0xFFFF):
            out.append("&#65533;")
        else:
            out.append(m.group(0))
    if pending_high is not None:
        out.append("&#65533;")
    out.append(text[pos:])
    return "".join(out)


def repair(doc: bytes) -> bytes:
    """One repair pass over a document that failed to parse.

    Decodes surrogates written as UTF-8 (CESU-8, as some phones do for emoji), replaces any
    other invalid byte sequence, combines surrogate pairs written as character references,
    and removes control characters and NULs that XML does not allow.
    """
    try:
        text = doc.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        text = doc.decode("utf-8", "surrogateescape")
        text = "".join("\ufffd" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in text)
    # Surrogate pairs as code points -> real characters; lone surrogates -> U+FFFD.
    text = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    text = _fix_char_refs(text)
    text = _BAD_CHARS.sub("", text)
    return text.encode("utf-8")


_BOMS = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)
_UTF16_SAMPLE = 512


def _utf16_without_bom(data: bytes) -> str | None:
    """``"utf-16-le"``/``"utf-16-be"`` when the input has UTF-16's pattern of mostly-ASCII text
    (every other byte NUL, the bytes between never), else None."""
    if len(data) < 8 or 0 not in data[:2]:
        return None  # UTF-16 of a dump's first character (ASCII) holds a NUL
    sample = data[: _UTF16_SAMPLE - _UTF16_SAMPLE % 2]
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) >= 0.9 * len(odd) and even.count(0) == 0:
        return "utf-16-le"
    if even.count(0) >= 0.9 * len(even) and odd.count(0) == 0:
        return "utf-16-be"
    return None


_UIAUTOMATOR_DECLARATION = b"<?xml version='1.0' encoding='UTF-8'"
"""The start of ``uiautomator dump``'s output: no byte-order mark, no UTF-16, the encoding
declared UTF-8 (what the checks of :func:`as_utf8` find in 2.5 us, a startswith in 0.15)."""


def as_utf8(data: bytes) -> bytes:
    """The input as UTF-8 bytes: a UTF-8 byte-order mark dropped, UTF-16 (with a byte-order
    mark, or without one but with UTF-16's NUL pattern) decoded. Anything else unchanged.

    Surrogates pass through as CESU-8 bytes, which the repair pass turns into characters, as
    it does for the phones that write emoji that way.
    """
    if data.startswith(_UIAUTOMATOR_DECLARATION):
        return data  # what uiautomator writes (every dump of the corpus): UTF-8 as it is
    encoding = next((enc for bom, enc in _BOMS if data.startswith(bom)), None)
    if encoding == "utf-8":
        return data[3:]
    if encoding is not None:
        body = data[2:]
    else:
        encoding = _utf16_without_bom(data)
        if encoding is None:
            return _declared_as_utf8(data)
        body = data
    # An odd last byte is half a character: only a truncated file ends so (and then the
    # document is reported truncated).
    text = body[: len(body) - len(body) % 2].decode(encoding, "surrogatepass")
    log.info("dump decoded from %s", encoding.upper())
    return text.lstrip("\ufeff").encode("utf-8", "surrogatepass")


_DECLARED = re.compile(
    rb"""\A[ \t\r\n]{0,64}<\?xml[ \t\r\n][^>\x80-\xff]{0,256}?\bencoding[ \t\r\n]*=[ \t\r\n]*"""
    rb"""(["'])([A-Za-z][A-Za-z0-9._:-]{0,39})\1"""
)
"""The encoding an XML declaration names, looked for at the start only (bounded)."""


def _declared_as_utf8(data: bytes) -> bytes:
    """``data`` in UTF-8 when its XML declaration names another encoding a byte of ASCII
    stands for itself in (ISO-8859-1, GBK, Shift_JIS: what a tool or a Windows redirect in a
    legacy code page writes), with the declaration saying UTF-8 (lxml reads it); bytes that
    encoding does not have become U+FFFD, as the repair does for UTF-8. Else ``data`` as it
    is. An encoding Python does not know is a :class:`TreeParseError`; one ASCII is not a
    part of (UTF-16 or -32 without their NULs, EBCDIC) cannot have spelt the declaration, which
    is then not the file's and left alone."""
    match = _DECLARED.match(data)
    if match is None:
        return data
    name = match.group(2).decode("ascii")
    try:
        encoding = codecs.lookup(name).name
        if encoding in ("utf-8", "ascii"):
            return data
        ascii_based = bytes(range(128)).decode(encoding) == "".join(map(chr, range(128)))
    except UnicodeDecodeError:
        ascii_based = False
    except LookupError:  # unknown, or not a text encoding (base64)
        raise TreeParseError(
            f"the dump's XML declaration names an unknown encoding {name!r}"
        ) from None
    if not ascii_based:
        return data
    text = data[match.end():].decode(encoding, "replace")
    log.info("dump decoded from %s (its XML declaration)", encoding.upper())
    head = data[: match.start(2)] + b"UTF-8" + data[match.end(2) : match.end()]
    return head + text.encode("utf-8")


_CLASS_TAG = re.compile(rb"<[A-Za-z_][\w-]*\.[\w.-]*[\s/>]")
"""A start tag named like a class (``<android.widget.FrameLayout ``): what marks a document
without ``<node>`` as Appium's page source. A dump's own names (``hierarchy``, ``node``) have
no dot."""


def class_tags(doc: bytes) -> bool:
    """Does ``doc`` name its elements by class (Appium's page source) rather than ``<node>``?"""
    return b"<node" not in doc and _CLASS_TAG.search(doc) is not None


def _scan(
    doc: bytes, config: TreeConfig, data: bytes, before: int
) -> tuple[int, I32, I32, I32, I32, I32, list[str]]:
    """Scan one document of ``data`` whose earlier documents hold ``before`` nodes: the node
    limit is the whole dump's."""
    by_class = class_tags(doc)
    try:
        return fastpath.scan_hierarchy(
            doc, config.max_depth, config.max_nodes - before, class_tags=by_class
        )
    except UnsafeXmlError as exc:
        # Both twins stop at the limit; say which one and what the dump holds.
        message = str(exc)
        if "nodes" in message:
            if by_class:
                names = _ELEMENT_NAME.findall(data)
                count = f"{sum(n != b'hierarchy' for n in names)} elements"
            else:
                count = f"{data.count(b'<node')} <node> elements"
            raise UnsafeXmlError(
                f"more nodes than the limit: {count} in the "
                f"dump, the limit is {config.max_nodes} (TreeConfig.max_nodes, "
                "PERCEPTION_TREE_MAX_NODES)"
            ) from None
        if "deep" in message or "depth" in message:
            raise UnsafeXmlError(
                f"nesting deeper than the limit of {config.max_depth} levels "
                "(TreeConfig.max_depth, PERCEPTION_TREE_MAX_DEPTH; at most 250)"
            ) from None
        raise


_BOUNDS_ATTR = re.compile(rb"""\sbounds\s*=\s*(["'])(.*?)\1""", re.S)


_USABLE_BOUNDS = re.compile(rb"(\[-?0*[0-9]{1,10},-?0*[0-9]{1,10}\]){2}")
"""What a usable ``bounds`` looks like, near enough to pick an example of an unusable one."""


def _unbounded_error(data: bytes, nodes: int, unbounded: int) -> TreeParseError:
    """The error for a dump in which ``unbounded`` of the ``nodes`` nodes (all, or more than
    half) have no usable bounds, quoting a bounds value that is not usable when there is one."""
    found = next(
        (m for m in _BOUNDS_ATTR.finditer(data) if not _USABLE_BOUNDS.fullmatch(m.group(2))),
        None,
    )
    if found:
        seen = f"e.g. bounds={_excerpt(found.group(2))}"
    elif unbounded < nodes:
        seen = "they have no bounds attribute"
    else:
        seen = "no bounds attribute at all"
    which = (
        f"no node of the dump has usable bounds ({nodes} node{'s' * (nodes != 1)}"
        if unbounded == nodes
        else f"most nodes of the dump have no usable bounds ({unbounded} of {nodes}"
    )
    return TreeParseError(
        f"{which}; {seen}; expected '[left,top][right,bottom]' in whole pixels)"
    )


_ELEMENT_NAME = re.compile(rb"<([^\s/>!?]+)")


def _without_comments(data: bytes) -> bytes:
    """``data`` without its ``<!-- ... -->`` comments; an unclosed one is left as it is. One
    pass of ``find``: the regex ``<!--.*?-->`` rescanned the rest of the input from every
    unclosed ``<!--`` (160 KB of them took 37 s)."""
    pieces = []
    pos = 0
    while (start := data.find(b"<!--", pos)) >= 0:
        end = data.find(b"-->", start + 4)
        if end < 0:
            break
        pieces.append(data[pos:start])
        pos = end + 3
    pieces.append(data[pos:])
    return b"".join(pieces)


def _not_a_dump(data: bytes) -> TreeParseError | None:
    """For a dump without a single ``<node>``: the error naming the first other element it
    holds (``<NODE>`` is not ``<node>``, a node after a self-closed ``<hierarchy/>`` is outside
    it), or None when it holds none (a genuinely empty screen)."""
    first = data.find(_HIERARCHY_OPEN)
    body = _without_comments(data[max(first, 0) :])
    for m in _ELEMENT_NAME.finditer(body):
        name = m.group(1).decode("utf-8", "replace")
        if name == "hierarchy":
            continue
        if name == "node":
            return TreeParseError(
                "not a uiautomator dump: <node> outside any <hierarchy> (after a self-closed "
                "<hierarchy/>?); every node must be inside a <hierarchy> element"
            )
        if name.lower() == "node":
            hint = "element names are case-sensitive"
        else:
            hint = "a uiautomator dump names every element <node>"
        return TreeParseError(
            f"not a uiautomator dump: <{name[:_EXCERPT_CHARS]}> where <node> was expected "
            f"({hint})"
        )
    return None


_DEFAULT_CONFIG = TreeConfig()
"""The defaults, made once (a TreeConfig is frozen): building and checking one took several
microseconds of every read_tree call, a few percent of a median dump's whole pipeline."""


def tree_config(config: object) -> TreeConfig:
    """``config`` as a :class:`TreeConfig` (None: the defaults); anything else (a dict of
    settings) is a :class:`ConfigError`."""
    if config is None:
        return _DEFAULT_CONFIG
    if not isinstance(config, TreeConfig):
        raise ConfigError(
            f"config must be a TreeConfig, not {type(config).__name__} "
            "(e.g. TreeConfig(max_nodes=...) or TreeConfig().with_(...))"
        )
    return config


def parse_dump(xml: bytes | str, config: TreeConfig | None = None) -> RawTree:
    """Parse dump bytes (or text) into a :class:`RawTree`; see the module docstring."""
    config = tree_config(config)
    data = xml.encode("utf-8", "surrogatepass") if isinstance(xml, str) else bytes(xml)
    # Checked before decoding (UTF-16 shrinks by up to half as UTF-8) and after it.
    if len(data) > 2 * config.max_input_bytes:
        raise UnsafeXmlError(
            f"dump is {len(data)} bytes, over the limit of {config.max_input_bytes} bytes"
        )
    data = as_utf8(data)
    if len(data) > config.max_input_bytes:
        raise UnsafeXmlError(
            f"dump is {len(data)} bytes, over the limit of {config.max_input_bytes} bytes"
        )
    if _declares(data):
        raise UnsafeXmlError("DOCTYPE/ENTITY declarations are refused (possible entity attack)")
    results: list[tuple[int, I32, I32, I32, I32, I32, list[str]]] = []
    repaired = False
    nodes = 0
    one = one_document(data)
    if one is not None:
        try:
            results.append(_scan(one, config, data, 0))
        except (TreeParseError, UnsafeXmlError):
            pass  # two documents run together, or a damaged one: framed and read as before
    docs = [] if results else frame_documents(data, config.max_documents)
    for doc in docs:
        try:
            results.append(_scan(doc, config, data, nodes))
        except UnsafeXmlError:
            raise
        except TreeParseError as first:
            fixed = repair(doc)
            if fixed == doc:
                raise
            try:
                results.append(_scan(fixed, config, data, nodes))
            except TreeParseError as second:
                raise TreeParseError(
                    f"{second} (after one repair pass; before it: {first})"
                ) from first
            log.info("dump repaired: %s", first)
            repaired = True
        nodes += len(results[-1][1])
    if len(results) == 1:
        rotation, parent, box, bits, draw, class_id, strings = results[0]
    else:
        rotation = results[0][0]
        offsets = np.cumsum([0] + [len(r[1]) for r in results[:-1]])
        parent = np.concatenate(
            [np.where(r[1] >= 0, r[1] + off, -1) for r, off in zip(results, offsets, strict=True)]
        ).astype(np.int32)
        box = np.concatenate([r[2] for r in results]).astype(np.int32).reshape(-1, 4)
        bits = np.concatenate([r[3] for r in results]).astype(np.int32)
        draw = np.concatenate([r[4] for r in results]).astype(np.int32)
        strings = [s for r in results for s in r[6]]
        # Class ids are per document: number them again over the whole dump.
        ids: dict[str, int] = {}
        class_id = np.array(
            [ids.setdefault(c, len(ids)) for c in strings[fastpath.F_CLASS :: fastpath.NFIELDS]],
            dtype=np.int32,
        )
    windows = int(np.count_nonzero(parent < 0))
    raw = RawTree(
        rotation=rotation,
        parent=parent,
        box_px=box,
        bits=bits,
        draw=draw,
        class_id=class_id,
        strings=strings,
        windows=windows,
        repaired=repaired,
    )
    if raw.count == 0:
        not_a_dump = _not_a_dump(data)
        if not_a_dump is not None:
            raise not_a_dump
    if (raw.bits & fastpath.B_HAS_BOUNDS).all():
        return raw  # every node has bounds (nearly every dump): one pass of numpy, not three
    unbounded = raw.unbounded
    if 2 * unbounded > raw.count:
        raise _unbounded_error(data, raw.count, unbounded)
    if unbounded:
        log.info("%d of %d nodes have no usable bounds and are dropped", unbounded, raw.count)
    return raw

"""The adb transport protocol, as the device side speaks it over TCP.

Every message is a 24-byte little-endian header followed by ``data_length`` payload bytes::

    command, arg0, arg1, data_length, data_crc32, magic   (magic = command ^ 0xffffffff)

``data_crc32`` is the byte sum of the payload; since protocol version 0x01000001 receivers do
not check it (we still fill it in). The flow (AOSP ``adb/protocol.txt``):

- host -> ``CNXN(version, maxdata, "host::features=...")``; device -> ``CNXN(version, maxdata,
  "device::ro.product.name=..;ro.product.model=..;ro.product.device=..;features=..")``, or
  ``AUTH(TOKEN, 0, 20 random bytes)`` when it wants a key (the host then answers
  ``AUTH(SIGNATURE)`` and finally ``AUTH(RSAPUBLICKEY)``; a device that never accepts stays
  *unauthorized*);
- host -> ``OPEN(local_id, 0, "service\\0")``; device -> ``OKAY(device_id, local_id)`` or
  ``CLSE(0, local_id)`` when the service does not exist;
- either side -> ``WRTE(own_id, peer_id, data)``; the receiver acknowledges each with
  ``OKAY`` and the sender waits for it before the next ``WRTE`` (flow control);
- either side -> ``CLSE(own_id, peer_id)`` ends the stream.

The sync service (``sync:``) runs its own framing inside a stream: 8-byte requests
``ID + uint32 length`` (``STAT``/``LIST``/``RECV``/``SEND`` + path, ``QUIT``) and replies
``STAT`` + mode/size/mtime, ``DENT`` entries, ``DATA`` chunks (<= 64 KiB), ``DONE``, ``OKAY``,
``FAIL`` + message (AOSP ``adb/SYNC.TXT``).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

HEADER = struct.Struct("<6I")
A_VERSION = 0x01000001
MAX_PAYLOAD = 1024 * 1024
"""The largest payload of protocol version 0x01000001 (Android 9+ and adb 28+)."""
SYNC_DATA_MAX = 64 * 1024

AUTH_TOKEN = 1
AUTH_SIGNATURE = 2
AUTH_RSAPUBLICKEY = 3


class Command(enum.IntEnum):
    SYNC = 0x434E5953
    CNXN = 0x4E584E43
    AUTH = 0x48545541
    OPEN = 0x4E45504F
    OKAY = 0x59414B4F
    CLSE = 0x45534C43
    WRTE = 0x45545257
    STLS = 0x534C5453


@dataclass(frozen=True, slots=True)
class Message:
    command: int
    arg0: int
    arg1: int
    data: bytes

    @property
    def name(self) -> str:
        try:
            return Command(self.command).name
        except ValueError:
            return f"0x{self.command:08x}"


def checksum(data: bytes) -> int:
    return sum(data) & 0xFFFFFFFF


def pack(command: int, arg0: int, arg1: int, data: bytes = b"") -> bytes:
    return HEADER.pack(command, arg0, arg1, len(data), checksum(data), command ^ 0xFFFFFFFF) + data


class ProtocolError(Exception):
    """The peer sent something that is not an adb message (internal to the simulator)."""


def unpack_header(raw: bytes) -> tuple[int, int, int, int]:
    command, arg0, arg1, length, _crc, magic = HEADER.unpack(raw)
    if magic != command ^ 0xFFFFFFFF:
        raise ProtocolError(f"bad magic for command 0x{command:08x}")
    if length > 16 * 1024 * 1024:
        raise ProtocolError(f"absurd payload length {length}")
    return command, arg0, arg1, length


def banner(*, product: str, model: str, device: str, features: str) -> bytes:
    return (
        f"device::ro.product.name={product};ro.product.model={model};"
        f"ro.product.device={device};features={features}"
    ).encode() + b"\0"


def sync_header(ident: bytes, value: int) -> bytes:
    return ident + struct.pack("<I", value)

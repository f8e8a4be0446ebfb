"""A TCP server that is an Android device to the real adb server (``adb connect HOST:PORT``).

One thread accepts connections; each connection has a reader thread that dispatches adb
messages (see :mod:`.protocol`) and one worker thread per open stream that runs the service
(``shell:``, ``shell,v2,...:``, ``exec:``, ``sync:``) and writes its output with flow control.

A buggy or hostile client cannot exhaust the host: at most :data:`MAX_CONNECTIONS`
connections, :data:`MAX_STREAMS_PER_CONNECTION` open streams on one and
:data:`MAX_STREAMS` on the device (an OPEN beyond is refused with CLSE, as adbd refuses a
service it cannot start). Input is flow-controlled as the protocol says: a ``sync:`` stream
acknowledges a WRTE only once the service has taken it, so at most one packet waits per
stream; a peer that sends another before the OKAY loses the stream. Shell commands read no
input: theirs is dropped (and acknowledged) as it comes. A push holds at most what the phone's
file store has room for (``remote write failed: No space left on device`` beyond). A connection
that has not sent its CNXN within ``handshake_timeout_s`` is closed; once it has, it stays as
long as its peer keeps it (an adb server waits at ``unauthorized`` for as long as the phone
does not answer its key, as it waits for a person to accept it on a real phone), until the
places are all taken: then a new connection takes the place of the one that has been quiet the
longest with no stream open, one that never sent its CNXN before any that did. An idle adb
server connection is normal, so no idle time alone cuts one; but clients that connect and sit
must not lock the phone's own adb server out for good. Only when every connection has a stream
open is a new one refused.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import struct
import threading
import time
from collections import deque
from pathlib import Path

from perception.errors import ConfigError, DeviceError
from perception.simdevice.phone import (
    NO_SPACE,
    STORAGE_BYTES,
    AdbKeyboard,
    Faults,
    NoSpaceError,
    Phone,
    Result,
)
from perception.simdevice.protocol import (
    A_VERSION,
    AUTH_SIGNATURE,
    AUTH_TOKEN,
    MAX_PAYLOAD,
    SYNC_DATA_MAX,
    Command,
    ProtocolError,
    banner,
    pack,
    sync_header,
    unpack_header,
)
from perception.sources.recording import Recording, read_recording

log = logging.getLogger(__name__)

FEATURES = "shell_v2,cmd"
ACK_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 32
"""Live connections at once (the adb server needs one). A connection beyond takes the place of
the one quiet the longest with no stream open, or is closed on accept when all are busy."""
MAX_STREAMS_PER_CONNECTION = 128
"""Open streams on one connection (each runs in a thread); further OPENs get CLSE."""
MAX_STREAMS = 256
"""Open streams on the whole device, over all connections."""
HANDSHAKE_TIMEOUT_S = 5.0
"""How long a new connection may take to send its CNXN. The adb server sends it as soon as
it connects, so only a client that is not adb (or a stalled one) takes longer; it is closed
so that it does not hold one of the :data:`MAX_CONNECTIONS` places."""
_SHELL_V2_STDOUT = 1
_SHELL_V2_STDERR = 2
_SHELL_V2_EXIT = 3


class _Closed(Exception):
    """The stream or the connection went away."""


class _Stream:
    def __init__(
        self, conn: _Connection, local_id: int, remote_id: int, service: str, *, reads: bool
    ) -> None:
        self.conn = conn
        self.local_id = local_id
        self.remote_id = remote_id
        self.service = service
        self.reads = reads
        """The service reads its input (``sync:``); else input is dropped as it comes."""
        self._pending: deque[bytes] = deque()
        self._arrived = threading.Condition()
        self._buffer = bytearray()
        self._ack = threading.Event()
        self.closed = threading.Event()

    def on_okay(self) -> None:
        self._ack.set()

    def on_write(self, data: bytes) -> bool:
        """Take a WRTE from the peer (reader thread); False when the peer did not wait for
        the OKAY of the one before (it broke flow control: the stream must go)."""
        if not self.reads:  # the command reads no input: taken (and dropped) at once
            self.conn.send(Command.OKAY, self.local_id, self.remote_id)
            return True
        with self._arrived:
            if self._pending:
                return False
            self._pending.append(data)
            self._arrived.notify()
        return True

    def on_close(self) -> None:
        self.closed.set()
        self._ack.set()
        with self._arrived:
            self._pending.clear()
            self._arrived.notify_all()

    def write(self, data: bytes, *, drop_after: int | None = None) -> None:
        """Send ``data`` in WRTE chunks, waiting for OKAY after each (flow control)."""
        chunk = self.conn.max_payload
        sent = 0
        view = memoryview(data)
        while sent < len(data):
            if self.closed.is_set():
                raise _Closed()
            piece = bytes(view[sent : sent + chunk])
            if drop_after is not None and sent + len(piece) > drop_after:
                piece = piece[: max(0, drop_after - sent)]
                if piece:
                    self._send_chunk(piece)
                log.warning("fault: dropping the connection mid-transfer (%s)", self.service)
                self.conn.abort()
                raise _Closed()
            self._send_chunk(piece)
            sent += len(piece)

    def _send_chunk(self, piece: bytes) -> None:
        self._ack.clear()
        self.conn.send(Command.WRTE, self.local_id, self.remote_id, piece)
        if not self._ack.wait(ACK_TIMEOUT_S) or self.closed.is_set():
            raise _Closed()

    def read_exact(self, n: int) -> bytes:
        """``n`` bytes of input; each WRTE is acknowledged once taken here (the peer sends
        the next only then, so one packet at most waits in memory)."""
        while len(self._buffer) < n:
            with self._arrived:
                while not self._pending and not self.closed.is_set():
                    self._arrived.wait()
                if not self._pending:
                    raise _Closed()
                item = self._pending.popleft()
            self._buffer.extend(item)
            self.conn.send(Command.OKAY, self.local_id, self.remote_id)
        out = bytes(self._buffer[:n])
        del self._buffer[:n]
        return out

    def close(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            self.conn.send(Command.CLSE, self.local_id, self.remote_id)
        self.conn.forget(self.local_id)


class _Connection:
    def __init__(
        self, server: SimDevice, sock: socket.socket, peer: str, handshake_timeout_s: float
    ) -> None:
        self.server = server
        self.sock = sock
        self.peer = peer
        self._handshake_deadline: float | None = time.monotonic() + handshake_timeout_s
        """When a connection that has not sent CNXN is closed; None once it has."""
        self.max_payload = 4096
        self._send_lock = threading.Lock()
        self._streams: dict[int, _Stream] = {}
        self._streams_lock = threading.Lock()
        self._next_id = 1
        self._running = 0
        """Streams whose service thread runs (guarded by ``_streams_lock``)."""
        self._refused = 0
        self.last_packet = time.monotonic()
        """When the peer last sent a packet (or connected): the quietest idle one is evicted
        first when the places are all taken."""
        self._online = False
        self._dead = False
        self.threads: list[threading.Thread] = []

    def send(self, command: int, arg0: int, arg1: int, data: bytes = b"") -> None:
        packet = pack(command, arg0, arg1, data)
        with self._send_lock:
            if self._dead:
                raise _Closed()
            try:
                self.sock.sendall(packet)
            except OSError as exc:
                self._dead = True
                raise _Closed() from exc

    def abort(self) -> None:
        self._dead = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()

    @property
    def handshaken(self) -> bool:
        """It sent its CNXN (an adb server does at once)."""
        return self._handshake_deadline is None

    @property
    def idle(self) -> bool:
        """No stream open (so cutting it loses no command's output)."""
        with self._streams_lock:
            return self._running == 0 and not self._streams

    def forget(self, local_id: int) -> None:
        with self._streams_lock:
            self._streams.pop(local_id, None)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            if self._handshake_deadline is not None:
                # A deadline, not a timeout per recv: a byte every few seconds must not last.
                left = self._handshake_deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no CNXN within the handshake timeout")
                self.sock.settimeout(left)
            part = self.sock.recv(n - len(buf))
            if not part:
                raise _Closed()
            buf.extend(part)
        return bytes(buf)

    def serve(self) -> None:
        try:
            while not self._dead:
                command, arg0, arg1, length = unpack_header(self._recv_exact(24))
                if length > MAX_PAYLOAD:  # more than the CNXN said we take: adbd hangs up
                    raise ProtocolError(f"payload of {length} bytes > {MAX_PAYLOAD}")
                data = self._recv_exact(length) if length else b""
                self.last_packet = time.monotonic()
                self._dispatch(command, arg0, arg1, data)
        except TimeoutError:
            log.warning(
                "closing the connection from %s: it sent no CNXN within the handshake timeout "
                "(an adb server sends it at once)", self.peer,
            )
        except (_Closed, OSError, ProtocolError) as exc:
            log.debug("connection %s ended: %r", self.peer, exc)
        finally:
            self._dead = True
            with self._streams_lock:
                streams = list(self._streams.values())
                self._streams.clear()
            for stream in streams:
                stream.on_close()
            try:
                self.sock.close()
            except OSError:
                pass

    def _dispatch(self, command: int, arg0: int, arg1: int, data: bytes) -> None:
        phone = self.server.phone
        if command == Command.CNXN:
            if self._handshake_deadline is not None:
                self._handshake_deadline = None
                self.sock.settimeout(None)  # an adb peer: kept as long as it stays
            self.max_payload = max(4096, min(arg1, MAX_PAYLOAD))
            if phone.faults.unauthorized:
                self.send(Command.AUTH, AUTH_TOKEN, 0, os.urandom(20))
                return
            self._online = True
            self.send(
                Command.CNXN,
                A_VERSION,
                MAX_PAYLOAD,
                banner(
                    product="perception_sim",
                    model=phone.model,
                    device="perception_sim",
                    features=FEATURES,
                ),
            )
        elif command == Command.AUTH:
            if arg0 == AUTH_SIGNATURE:
                # Never accept a key: the host ends up showing "unauthorized".
                self.send(Command.AUTH, AUTH_TOKEN, 0, os.urandom(20))
        elif not self._online:
            log.debug("ignoring %08x before the handshake", command)
        elif command == Command.OPEN:
            self._open(arg0, data.rstrip(b"\0").decode("utf-8", "replace"))
        elif command == Command.OKAY:
            stream = self._streams.get(arg1)
            if stream is not None:
                stream.on_okay()
        elif command == Command.WRTE:
            stream = self._streams.get(arg1)
            if stream is not None and not stream.on_write(data):
                log.warning(
                    "closing stream %r from %s: a WRTE came before the OKAY of the last one",
                    stream.service, self.peer,
                )
                self.forget(arg1)
                stream.on_close()
                self.send(Command.CLSE, stream.local_id, stream.remote_id)
        elif command == Command.CLSE:
            with self._streams_lock:
                stream = self._streams.pop(arg1, None)
            if stream is not None:
                stream.on_close()

    def _open(self, remote_id: int, service: str) -> None:
        handler = _service_handler(service)
        if handler is None:
            log.info("refusing unknown service %r", service)
            self.send(Command.CLSE, 0, remote_id)
            return
        with self._streams_lock:
            full = self._running >= MAX_STREAMS_PER_CONNECTION
            if not full and not self.server.take_stream():
                full = True
            if not full:
                self._running += 1
                local_id = self._next_id
                self._next_id += 1
                stream = _Stream(
                    self, local_id, remote_id, service, reads=isinstance(handler, _SyncService)
                )
                self._streams[local_id] = stream
        if full:
            self._refused += 1
            log.log(
                logging.WARNING if self._refused == 1 else logging.DEBUG,
                "refusing %r from %s: %d streams open on the connection (at most %d), "
                "%d on the device (at most %d); further refusals on this connection are "
                "logged at debug level", service, self.peer, self._running,
                MAX_STREAMS_PER_CONNECTION, self.server.streams, MAX_STREAMS,
            )
            self.send(Command.CLSE, 0, remote_id)
            return
        try:
            self.send(Command.OKAY, local_id, remote_id)
        except _Closed:
            with self._streams_lock:
                self._running -= 1
            self.server.give_stream()
            raise
        worker = threading.Thread(
            target=self._run_service,
            args=(handler, stream),
            daemon=True,
            name=f"simdevice-stream-{local_id}",
        )
        self.threads = [t for t in self.threads if t.is_alive()]
        self.threads.append(worker)
        worker.start()

    def _run_service(self, handler: _Handler, stream: _Stream) -> None:
        try:
            handler(self.server.phone, stream)
        except _Closed:
            pass
        except Exception:  # a service bug must not kill the device
            log.exception("service %r failed", stream.service)
        finally:
            try:
                stream.close()
            except _Closed:
                pass
            with self._streams_lock:
                self._running -= 1
            self.server.give_stream()


class _Handler:
    def __call__(self, phone: Phone, stream: _Stream) -> None:  # pragma: no cover - protocol
        raise NotImplementedError


INTERACTIVE_REFUSED = (
    b"perception-simdevice: an interactive shell is not emulated by the virtual phone; "
    b"run one command at a time: adb shell COMMAND"
)
HOLD_POLL_S = 0.2


class _ShellService(_Handler):
    def __init__(self, command: str, *, v2: bool, pty: bool = False) -> None:
        self.command = command
        self.v2 = v2
        self.pty = pty
        """The client asked for a terminal (``adb shell`` typed at one): it shows a bare
        ``\\n`` without a carriage return."""

    def __call__(self, phone: Phone, stream: _Stream) -> None:
        if not self.command.strip():
            # `adb shell` without a command: say so and fail, rather than an empty success.
            message = INTERACTIVE_REFUSED + (b"\r\n" if self.pty else b"\n")
            result = Result(stderr=message, code=1)
        else:
            try:
                result = phone.run(self.command)
            except Exception as exc:  # noqa: BLE001 - a command bug answers like a failing one
                log.exception("command %r failed in the simulator", self.command)
                result = Result(stderr=f"/system/bin/sh: {exc!r}\n".encode(), code=1)
        if self.v2:
            payload = b""
            if result.stdout:
                payload += struct.pack("<BI", _SHELL_V2_STDOUT, len(result.stdout)) + result.stdout
            if result.stderr:
                payload += struct.pack("<BI", _SHELL_V2_STDERR, len(result.stderr)) + result.stderr
            if not result.hold:
                payload += struct.pack("<BI", _SHELL_V2_EXIT, 1) + bytes([result.code & 0xFF])
            drop = None if result.drop_after is None else result.drop_after + 5
            if payload:
                stream.write(payload, drop_after=drop)
        elif result.stderr_first:  # no shell protocol: one stream, in the order written
            drop = None if result.drop_after is None else result.drop_after + len(result.stderr)
            stream.write(result.stderr + result.stdout, drop_after=drop)
        else:
            stream.write(result.stdout + result.stderr, drop_after=result.drop_after)
        if result.hold:  # a command that never ends (logcat): open until the client leaves
            while not stream.closed.wait(HOLD_POLL_S) and not phone.stopping.is_set():
                pass


class _SyncService(_Handler):
    def __call__(self, phone: Phone, stream: _Stream) -> None:
        files = phone.files
        while True:
            head = stream.read_exact(8)
            ident, length = head[:4], struct.unpack("<I", head[4:])[0]
            if ident == b"QUIT":
                return
            if length > 4096:
                stream.write(_fail("path too long"))
                return
            path = stream.read_exact(length).decode("utf-8", "replace")
            if ident == b"STAT":
                content = files.data.get(path)
                if content is None:
                    is_dir = any(p.startswith(path.rstrip("/") + "/") for p in files.data)
                    mode = 0o040755 if is_dir or path in {"/", "/sdcard", "/data/local/tmp"} else 0
                    stream.write(b"STAT" + struct.pack("<III", mode, 0, 0))
                else:
                    stream.write(
                        b"STAT" + struct.pack("<III", 0o100644, len(content), files.mtime[path])
                    )
            elif ident == b"LIST":
                prefix = path.rstrip("/") + "/"
                out = bytearray()
                for name, content in sorted(files.data.items()):
                    if name.startswith(prefix) and "/" not in name[len(prefix) :]:
                        base = name[len(prefix) :].encode()
                        out += (
                            b"DENT"
                            + struct.pack(
                                "<IIII", 0o100644, len(content), files.mtime[name], len(base)
                            )
                            + base
                        )
                stream.write(bytes(out) + sync_header(b"DONE", 0) + b"\0" * 12)
            elif ident == b"RECV":
                content = files.data.get(path)
                if content is None:
                    stream.write(_fail(f"remote object '{path}' does not exist"))
                    continue
                out = bytearray()
                for i in range(0, len(content), SYNC_DATA_MAX):
                    piece = content[i : i + SYNC_DATA_MAX]
                    out += sync_header(b"DATA", len(piece)) + piece
                out += sync_header(b"DONE", 0)
                stream.write(bytes(out))
            elif ident == b"SEND":
                target = path.rsplit(",", 1)[0]
                room = files.room(target)
                buf: bytearray | None = bytearray()
                while True:
                    head = stream.read_exact(8)
                    kind, size = head[:4], struct.unpack("<I", head[4:])[0]
                    if kind == b"DATA":
                        if size > SYNC_DATA_MAX:  # adbd's limit on one DATA block
                            stream.write(_fail("oversize data message"))
                            return
                        piece = stream.read_exact(size)
                        if buf is not None and len(buf) + size > room:
                            buf = None  # the disk is full: read the rest and drop it, as adbd
                        if buf is not None:
                            buf += piece
                    elif kind == b"DONE":
                        break
                    else:
                        stream.write(_fail(f"unexpected {kind!r} in SEND"))
                        return
                try:
                    if buf is None:
                        raise NoSpaceError(target)
                    files.write(target, bytes(buf))
                except NoSpaceError:
                    log.warning("push to %s refused: the file store is full (%d bytes)",
                                target, files.capacity)
                    stream.write(_fail(f"write failed: {NO_SPACE}"))
                    return  # adbd ends the sync session after a failed SEND
                stream.write(sync_header(b"OKAY", 0))
            else:
                stream.write(_fail(f"unknown sync request {ident!r}"))
                return


def _fail(message: str) -> bytes:
    data = message.encode()
    return sync_header(b"FAIL", len(data)) + data


def _service_handler(service: str) -> _Handler | None:
    if service.startswith("shell") and ":" in service:
        options, _, command = service.partition(":")
        flags = options.split(",")[1:]
        return _ShellService(command, v2="v2" in flags, pty="pty" in flags)
    if service.startswith("exec:"):
        return _ShellService(service[len("exec:") :], v2=False)
    if service == "sync:":
        return _SyncService()
    return None


class SimDevice:
    """Serve one recording as a phone on ``host:port`` (port 0 picks a free one).

    ``serial`` for adb is ``f"{host}:{port}"`` once connected with ``adb connect``.
    """

    def __init__(
        self,
        recording: Recording | str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Faults | None = None,
        model: str = "PerceptionSim",
        adb_keyboard: AdbKeyboard | str = AdbKeyboard.ABSENT,
        storage_bytes: int = STORAGE_BYTES,
        handshake_timeout_s: float = HANDSHAKE_TIMEOUT_S,
    ) -> None:
        if not 0 < handshake_timeout_s < math.inf:
            raise ConfigError(
                f"handshake_timeout_s must be a positive, finite number of seconds, got "
                f"{handshake_timeout_s!r}"
            )
        self.handshake_timeout_s = handshake_timeout_s
        """How long a new connection may take to send CNXN before it is closed."""
        rec = recording if isinstance(recording, Recording) else read_recording(recording)
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._sock.bind((host, port))
        except OSError as exc:
            self._sock.close()
            raise DeviceError(f"cannot listen on {host}:{port}: {exc}") from exc
        self._sock.listen(8)
        self.host = host
        self.port = int(self._sock.getsockname()[1])
        try:
            self.phone = Phone(
                rec,
                serial=self.serial,
                model=model,
                faults=faults,
                adb_keyboard=adb_keyboard,
                storage_bytes=storage_bytes,
            )
        except ConfigError:
            self._sock.close()
            raise
        self._connections: list[_Connection] = []
        self._lock = threading.Lock()
        self.streams = 0
        """Streams open on the device, over all connections (at most :data:`MAX_STREAMS`)."""
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def serial(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def faults(self) -> Faults:
        return self.phone.faults

    def take_stream(self) -> bool:
        """Count one more open stream, or False when :data:`MAX_STREAMS` are open."""
        with self._lock:
            if self.streams >= MAX_STREAMS:
                return False
            self.streams += 1
            return True

    def give_stream(self) -> None:
        with self._lock:
            self.streams -= 1

    def start(self) -> SimDevice:
        self._thread = threading.Thread(
            target=self._accept_loop, daemon=True, name=f"simdevice-{self.port}"
        )
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        try:
            self._sock.settimeout(0.1)  # close() does not wake accept(): poll the stop flag
        except OSError:  # stopped before this thread ran (a signal at start): socket closed
            return
        while not self._stopped.is_set():
            try:
                sock, addr = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            sock.settimeout(None)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = _Connection(self, sock, f"{addr[0]}:{addr[1]}", self.handshake_timeout_s)
            reader = threading.Thread(
                target=conn.serve, daemon=True, name=f"simdevice-conn-{addr[1]}"
            )
            with self._lock:
                self._connections = [c for c in self._connections if not c._dead]
                evicted = None
                if len(self._connections) >= MAX_CONNECTIONS:
                    idle = [c for c in self._connections if c.idle]
                    if idle:
                        # One that never finished its handshake first (a port scan, a health
                        # check): an adb server that did stays while such a one is there.
                        evicted = min(idle, key=lambda c: (c.handshaken, c.last_packet))
                        self._connections.remove(evicted)
                full = len(self._connections) >= MAX_CONNECTIONS
                if not full:
                    self._connections.append(conn)
            if full:
                log.warning(
                    "refusing a connection from %s: %d are open (at most %d), each with a "
                    "stream open", conn.peer, MAX_CONNECTIONS, MAX_CONNECTIONS,
                )
                sock.close()
                continue
            if evicted is not None:
                log.warning(
                    "closing the connection from %s, quiet for %.0f s with no stream open, so "
                    "that %s can connect: %d are open (at most %d)", evicted.peer,
                    time.monotonic() - evicted.last_packet, conn.peer, MAX_CONNECTIONS,
                    MAX_CONNECTIONS,
                )
                evicted.abort()
            log.info("adb host connected from %s", conn.peer)
            reader.start()

    def drop_connections(self) -> None:
        """Cut every live connection (the adb server sees the device go away)."""
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            conn.abort()

    def stop(self, timeout_s: float = 2.0) -> None:
        self._stopped.set()
        self.phone.stopping.set()  # a command sleeping in a slow_ms fault must not hold us
        try:
            self._sock.close()
        except OSError:
            pass
        self.drop_connections()
        if self._thread is not None:
            self._thread.join(timeout_s)
        deadline = time.monotonic() + timeout_s
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            for t in conn.threads:
                t.join(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> SimDevice:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: object) -> None:
        self.stop()

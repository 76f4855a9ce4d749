"""Limits on a connection before the app sees a request: uvicorn's protocol, bounded.

uvicorn's httptools protocol reads a request line and headers of any size (httptools keeps a
header value in memory until it ends: a 20 MB header was read whole before authentication),
waits for them forever (a client sending a header line every 10 s stays connected), and takes
any number of connections. :class:`BoundedHttpProtocol` is that protocol with the limits of
``worker.config.rest_limits`` applied while the bytes arrive:

* the request line over ``rest.request.line.max.bytes`` → 414; the header lines over
  ``rest.request.headers.max.bytes`` in all, or more than ``rest.request.headers.max.count``
  of them → 431. Counted as the bytes arrive, so a request head costs at most its limit plus
  one read (256 KiB) before it is refused;
* a request whose headers are not all in within ``rest.request.headers.timeout.ms`` of the
  connection opening or the previous response ending → 408 (a connection on which no byte
  of a request arrived by then is closed without an answer: an idle pooled connection must
  not receive a 408 its client could take for the answer to its next request);
* a connection beyond ``rest.max.connections`` (over all listeners of the worker) → 503;
* a request answered before its body ended (a 413 or 401, say) does not keep the connection
  reading: the rest of the body is not parsed, and the connection is closed.

A refused request gets Connect's error body and ``Connection: close``. A connection is closed
the way a client can read the answer while it is still sending: our side is shut for writing
(FIN after the answer) and what the client still sends is discarded unread for ``LINGER_S`` at
most. Closing at once with unread bytes would make the kernel reset the connection, and a
client still sending a large body would see "connection reset" instead of the 413. uvicorn's
request cycle closes the transport itself after an answer with ``Connection: close``; it is
handed a transport whose ``close`` lingers in the same way (:class:`_LingeringTransport`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, ClassVar

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from worker.config import rest_limits as keys
from worker.config.rest_limits import RestLimits

#: How long a refused connection keeps discarding what its client still sends.
LINGER_S = 2.0


class ConnectionSlots:
    """Open connections of one REST server (all its listeners share one event loop, so a
    plain counter is enough), against ``rest.max.connections``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0

    def acquire(self) -> bool:
        if self.open >= self.limit:
            return False
        self.open += 1
        return True

    def release(self) -> None:
        self.open = max(0, self.open - 1)


class _Refusal(Exception):
    """Raised in a parser callback to stop parsing and answer ``status``."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error_bytes(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 response with Connect's error body, closing the connection."""
    body = json.dumps({"error_code": status, "message": message}).encode()
    return b"".join([STATUS_LINE[status], b"content-type: application/json\r\n",
                     b"content-length: ", str(len(body)).encode(), b"\r\n",
                     b"connection: close\r\n\r\n", body])


class _LingeringTransport:
    """The connection's transport as uvicorn's request cycle sees it: ``close`` lingers
    (``BoundedHttpProtocol._linger``) while the request's body is still arriving."""

    def __init__(self, transport: asyncio.Transport, protocol: BoundedHttpProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def close(self) -> None:
        if self._protocol.body_unfinished():
            self._protocol._linger()
        else:
            self._transport.close()


class BoundedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the request limits (see the module docstring).

    ``limits`` and ``slots`` are class attributes: uvicorn builds a protocol per connection
    from the class alone; :func:`bounded_protocol` makes the class for one server.
    """

    limits: ClassVar[RestLimits] = RestLimits()
    slots: ClassVar[ConnectionSlots | None] = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._holds_slot = False
        self._raw: asyncio.Transport | None = None
        self._lost = False
        self.lingering = False
        self._refused = False
        self._awaiting_head = True  # no request's headers complete since the last response
        self._head_timer: asyncio.TimerHandle | None = None
        self._head_bytes = 0
        self._header_bytes = 0
        self._header_count = 0

    # --- connection ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw = transport
        self.transport = _LingeringTransport(transport, self)  # type: ignore[assignment]
        if self.slots is not None:
            if not self.slots.acquire():
                self._refuse(503, f"Too many connections to this worker: "
                                  f"{self.slots.limit} are open ({keys.MAX_CONNECTIONS})")
                return
            self._holds_slot = True
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._holds_slot and self.slots is not None:
            self.slots.release()
            self._holds_slot = False
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # lingering: discarded unread
        self._unset_keepalive_if_required()
        if self._awaiting_head:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            refusal = exc.__context__
            if isinstance(refusal, _Refusal):
                self._refuse(refusal.status, refusal.message)
            else:
                self._refuse(400, "Invalid HTTP request received.")
            return
        except httptools.HttpParserUpgrade:
            self._refuse(400, "Unsupported upgrade request.")
            return
        except httptools.HttpParserError:
            self._refuse(400, "Invalid HTTP request received.")
            return
        limit = self.limits.request_line_max_bytes + self.limits.headers_max_bytes
        if self._awaiting_head and self._head_bytes > limit:
            # A header line (or request line) still arriving: httptools buffers it whole.
            self._refuse(431, self._headers_too_large())

    # --- parser callbacks ---------------------------------------------------------------

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._awaiting_head = True
        self._head_bytes = 0
        self._header_bytes = 0
        self._header_count = 0
        if self._head_timer is None:
            self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.request_line_max_bytes:
            raise _Refusal(414, f"The request line is longer than "
                                f"{self.limits.request_line_max_bytes} bytes "
                                f"({keys.REQUEST_LINE_MAX_BYTES})")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        self._header_bytes += len(name) + len(value) + 4  # ": " and CRLF
        if self._header_count > self.limits.headers_max_count:
            raise _Refusal(431, f"The request has more than {self.limits.headers_max_count} "
                                f"headers ({keys.HEADERS_MAX_COUNT})")
        if self._header_bytes > self.limits.headers_max_bytes:
            raise _Refusal(431, self._headers_too_large())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        # The latest request's cycle; when it is complete, nothing is pipelined behind it.
        cycle = self.cycle
        idle = cycle is None or cycle.response_complete
        if idle and cycle is not None and cycle.more_body and not self.transport.is_closing():
            # Answered before its body ended (refused, unauthenticated, ...): reading on
            # would only parse bytes nobody wants.
            self.server_state.total_requests += 1
            self._linger()
            return
        super().on_response_complete()
        if idle and not self.transport.is_closing():
            # The next request's headers are on the clock from now.
            self._awaiting_head = True
            self._head_bytes = 0
            self._arm_head_timer()

    # --- refusing -----------------------------------------------------------------------

    def _headers_too_large(self) -> str:
        return (f"The request headers are larger than {self.limits.headers_max_bytes} bytes "
                f"({keys.HEADERS_MAX_BYTES})")

    def _arm_head_timer(self) -> None:
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.limits.headers_timeout_s,
                                                self._head_timed_out)

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self._awaiting_head or self._refused or self.transport.is_closing():
            return
        if not self._head_bytes:
            self._close()  # idle: nothing to answer
            return
        timeout_ms = round(self.limits.headers_timeout_s * 1000)
        self._refuse(408, f"The request headers did not arrive within {timeout_ms} ms "
                          f"({keys.HEADERS_TIMEOUT_MS})")

    def body_unfinished(self) -> bool:
        """Whether the current request's body is still arriving (unread)."""
        return (not self._lost and self.cycle is not None and self.cycle.more_body
                and not self.cycle.disconnected)

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with Connect's error body, then close (lingering)."""
        self._refused = True
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self.transport.write(error_bytes(status, message))
        self._linger()

    def _linger(self) -> None:
        """Close so that the client can read what was written: FIN now (where the transport
        can half-close; TLS cannot), discard what arrives, close after ``LINGER_S``."""
        self._refused = True
        self._unset_keepalive_if_required()
        raw = self._raw
        if raw is None or self.lingering or raw.is_closing():
            return
        self.lingering = True
        if raw.can_write_eof():
            raw.write_eof()
        self.flow.resume_reading()  # let the client finish sending, into the void
        self.loop.call_later(LINGER_S, self._close)

    def _close(self) -> None:
        if self._raw is not None and not self._raw.is_closing():
            self._raw.close()

    def shutdown(self) -> None:
        if self._refused:
            self._close()
        else:
            super().shutdown()


def bounded_protocol(base: type[BoundedHttpProtocol], limits: RestLimits,
                     slots: ConnectionSlots) -> type[BoundedHttpProtocol]:
    """``base`` (this protocol or a subclass) bound to one server's limits and slots."""
    return type(base.__name__, (base,), {"limits": limits, "slots": slots})

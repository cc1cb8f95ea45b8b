"""uvicorn's HTTP protocol (httptools) with a time limit on a request's headers.

uvicorn bounds idle keep-alive connections and the application bounds reading the body
(serve.rest), but a client that sends part of a request line or of the headers and then stops
would hold its connection open forever (and many such clients, the server's sockets). Here each
request's headers must be complete within `header_timeout` seconds of its first byte (or of
the connection, for the first request); otherwise the client gets 408 and the connection closes.
"""
from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

HEADER_TIMEOUT = 30.0


def with_header_timeout(seconds: float) -> type:
    """The protocol class to hand uvicorn.Config(http=...)."""
    return type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout": seconds})


class HeaderTimeoutProtocol(HttpToolsProtocol):
    header_timeout = HEADER_TIMEOUT
    _header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._start_header_timer()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._start_header_timer()

    def on_headers_complete(self) -> None:
        self._stop_header_timer()
        super().on_headers_complete()

    def connection_lost(self, exc) -> None:
        self._stop_header_timer()
        super().connection_lost(exc)

    def _start_header_timer(self) -> None:
        self._stop_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._headers_too_slow)

    def _stop_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being answered: its own limits apply
        if not self.transport.is_closing():
            body = (b'{"error": "The client did not send the request headers within %g s"}'
                    % self.header_timeout)
            self.transport.write(b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                                 b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            self.transport.close()

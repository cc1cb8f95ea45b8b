"""The one error the serving core raises, carrying a TensorFlow Serving / gRPC canonical code.

Both front ends translate it: REST to the HTTP status TensorFlow Serving answers with
(`http_status`), gRPC to the status code of the same name. Everything a client did wrong, or
that the server cannot do right now, is a ServingError; anything else escaping the core is a bug
the front ends report as INTERNAL.
"""
from __future__ import annotations

HTTP_STATUS = {
    "OK": 200,
    "CANCELLED": 499,
    "UNKNOWN": 500,
    "INVALID_ARGUMENT": 400,
    "DEADLINE_EXCEEDED": 504,
    "NOT_FOUND": 404,
    "ALREADY_EXISTS": 409,
    "PERMISSION_DENIED": 403,
    "RESOURCE_EXHAUSTED": 429,
    "FAILED_PRECONDITION": 400,
    "ABORTED": 409,
    "OUT_OF_RANGE": 400,
    "UNIMPLEMENTED": 501,
    "INTERNAL": 500,
    "UNAVAILABLE": 503,
    "DATA_LOSS": 500,
    "UNAUTHENTICATED": 401,
}
"""Canonical code -> HTTP status, as TensorFlow Serving's HTTP server maps them."""


class ServingError(Exception):
    """A request that cannot be served: `code` is a canonical name (INVALID_ARGUMENT,
    NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED,
    INTERNAL, UNIMPLEMENTED), `message` says what is wrong and where."""

    def __init__(self, code: str, message: str):
        if code not in HTTP_STATUS or code == "OK":
            raise ValueError(f"not an error code: {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def http_status(self) -> int:
        return HTTP_STATUS[self.code]

    def __str__(self) -> str:
        return self.message


def invalid(message: str) -> ServingError:
    return ServingError("INVALID_ARGUMENT", message)

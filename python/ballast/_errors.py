"""ballast's exceptions: one base class, `ballast.Error`, and a subclass per error code.

Each also derives from the builtin exception that fits, so code that already catches
FileNotFoundError, KeyError or ValueError keeps working. The native module raises them through
`_from_native`.
"""
from __future__ import annotations


class Error(Exception):
    """A failure reported by ballast.

    Attributes:
        code: the error code's name ("not_found", "invalid_format", ...).
        message: what went wrong, without the context.
        source: the file, URL or other source it concerns, or None.
        tensor: the tensor it concerns, or None.
        offset: the byte offset in the source, or None.
        expected, actual: what was expected and what was found, or None.
    """

    code = "error"

    def __init__(self, text: str, *, message: str | None = None, source: str | None = None,
                 tensor: str | None = None, offset: int | None = None,
                 expected: str | None = None, actual: str | None = None) -> None:
        super().__init__(text)
        self.text = text
        self.message = message if message is not None else text
        self.source = source
        self.tensor = tensor
        self.offset = offset
        self.expected = expected
        self.actual = actual

    def __str__(self) -> str:
        return self.text


class NotFoundError(Error, LookupError):
    """A file, tensor, object or repository does not exist."""
    code = "not_found"


class SourceNotFoundError(NotFoundError, FileNotFoundError):
    """A file, URL, object or repository does not exist (also a FileNotFoundError)."""


class TensorNotFoundError(NotFoundError, KeyError):
    """The source has no tensor of that name (also a KeyError)."""


class InvalidFormatError(Error, ValueError):
    """The bytes do not follow the format they claim."""
    code = "invalid_format"


class UnsupportedError(Error, NotImplementedError):
    """Valid, but not something ballast (or the chosen framework) does."""
    code = "unsupported"


class ShapeMismatchError(Error, ValueError):
    """A shape disagrees with what the spec or a transformation expects."""
    code = "shape_mismatch"


class DTypeMismatchError(Error, TypeError):
    """A dtype disagrees with what the spec or a transformation expects."""
    code = "dtype_mismatch"


class IoError(Error, OSError):
    """The operating system failed a read, open or map."""
    code = "io"


class NetworkError(Error, ConnectionError):
    """A remote peer could not be reached or broke off."""
    code = "network"


class AuthError(Error, PermissionError):
    """Credentials are missing or were refused."""
    code = "auth"


class IntegrityError(Error, ValueError):
    """A checksum or hash does not match."""
    code = "integrity"


class LimitExceededError(Error, ValueError):
    """A configured bound (size, count, depth) would be crossed."""
    code = "limit_exceeded"


class CancelledError(Error):
    """The load was cancelled or a timeout expired."""
    code = "cancelled"


class InvalidArgumentError(Error, ValueError):
    """The request itself is malformed (a bad dtype name, a bad option)."""
    code = "invalid_argument"


_BY_CODE: dict[str, type[Error]] = {
    cls.code: cls
    for cls in (NotFoundError, InvalidFormatError, UnsupportedError, ShapeMismatchError,
                DTypeMismatchError, IoError, NetworkError, AuthError, IntegrityError,
                LimitExceededError, CancelledError, InvalidArgumentError)
}


def _from_native(code: str, text: str, message: str, source: str | None, tensor: str | None,
                 offset: int | None, expected: str | None, actual: str | None) -> Error:
    """The exception for a ballast::Error (called by the native module)."""
    cls = _BY_CODE.get(code, Error)
    if cls is NotFoundError:
        cls = TensorNotFoundError if tensor else SourceNotFoundError
    return cls(text, message=message, source=source, tensor=tensor, offset=offset,
               expected=expected, actual=actual)

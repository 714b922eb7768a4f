"""sha256, without paying for OpenSSL on the per-call path.

`hashlib` loads the OpenSSL binding (`_hashlib`), about 2 ms per process here, which is 5% of
an entire `evidence add` (docs/benchmarks.md). CPython also ships its own builtin sha256
(`_sha2` since 3.12, `_sha256` before), which gives the same digest and imports in microseconds.
We use it when present and fall back to hashlib otherwise; a test checks both agree.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the capture hook imports this module: it must not load `typing`
    from collections.abc import Callable
    from typing import Any

sha256: Callable[[bytes], Any]
"""A new sha256 hash object of the bytes given, from whichever module above was found."""
try:
    from _sha2 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha256


def sha1(data: bytes = b"") -> Any:
    """A new SHA-1 hash object: git's object ids in a SHA-1 repository, not a security digest.

    CPython's own `_sha1`, like its sha256 above, imports in microseconds where `hashlib`
    loads OpenSSL; it is imported on first use, since most calls never hash a git object.
    """
    try:
        from _sha1 import sha1 as new  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - other interpreters
        from hashlib import sha1 as new
    return new(data)  # noqa: S324 - git's object ids, not a security digest


def sha256_hex(data: bytes) -> str:
    """The hex sha256 of `data`."""
    return str(sha256(data).hexdigest())

"""Hold a case lock until killed. Usage: hold_lock.py LOCK_PATH BACKEND

BACKEND is "fcntl" or "portalocker" (the fallback used where fcntl is missing); on Linux both
take the same flock, so each must exclude the other.
"""

from __future__ import annotations

import sys
import time

from cortex.cases import lock
from cortex.cases.records import LockInfo


def main() -> None:
    path, backend = sys.argv[1], sys.argv[2]
    lock.BACKEND = backend
    info = LockInfo(pid=0, host="test-host", actor="lock-holder", operation="hold", since="now")
    held = lock.FileLock(path, timeout=5, info=info, what="test lock")
    held.acquire()
    sys.stdout.write("held\n")
    sys.stdout.flush()
    time.sleep(120)


if __name__ == "__main__":
    main()

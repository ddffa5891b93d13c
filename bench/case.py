"""One benchmark case: what bench/measure.py runs, times and reports."""
from dataclasses import dataclass
from typing import Callable, Optional


@dataclass
class Case:
    group: str  # the input (file or server) it reads
    name: str
    kind: str  # baseline, direct-baseline, ballast or peer
    path: str  # the local input, page-cached before every run
    cmd: list
    parse: Callable  # bench/timing.py: cmd -> (seconds, peak RSS bytes, CPU seconds)
    work: Optional[str] = None  # rows doing the same work are compared with the best peer's
    nbytes: Optional[int] = None  # bytes for GB/s; default the input's size on disk
    prepare: Optional[Callable] = None  # untimed, before every run (e.g. empty a download folder)

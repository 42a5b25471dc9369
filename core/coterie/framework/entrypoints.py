"""The entry points a start reads, remembered while nothing they come from has changed (issue 18).

A start needs three things from the installed distributions' metadata: the ``coterie`` entry
points of every distribution, and the ``coterie.builtins`` and ``coterie.provides`` entry points of
the ``coterie`` distribution. :func:`scan` reads them with :mod:`importlib.metadata`, as before:
importing it (with :mod:`email`, :mod:`zipfile`, :mod:`csv`, :mod:`importlib.resources`) and
reading every distribution's ``entry_points.txt`` was ~25-35 ms of a ``coterie chat`` start here.

:func:`found` answers from an *index* of the last scan when it can prove that the scan would
read the same things now. The index records what :mod:`importlib.metadata` looks at:

* ``sys.path`` (each entry made absolute: ``""`` is the working directory) and the interpreter;
* for each entry, its inode, modification and status change times and size (a directory's
  change when a distribution's metadata directory is added, removed or renamed in it; a zip
  file's when it is rewritten), and the metadata directories it held (``*.dist-info``,
  ``*.egg-info``, ``EGG-INFO``);
* in each of those, the same of its ``entry_points.txt`` and ``METADATA`` (and ``PKG-INFO``,
  read in its place when there is no ``METADATA``), present or not, so a file edited in place
  is seen too (the status change time cannot be set back, as the modification time can).

Every one of them is looked at again (``stat``, ~270 calls here, ~1.5 ms) before the index is
used; anything different, and :func:`scan` runs and the index is written anew. Only
distributions found through ``sys.path`` are covered: if any finder on ``sys.meta_path`` other
than the standard ``PathFinder`` can find distributions, there is no index. An index is written
only when every time it records is at least :data:`SETTLED` seconds old when read, so a change
made within the same clock tick as the look (a ``pip install`` running at that moment) still
gives a newer time than the one recorded. The file lives beside this module's bytecode and
follows its rules (not written under ``PYTHONDONTWRITEBYTECODE``; written atomically; an
unreadable one is ignored). ``python -m coterie`` puts the working directory on ``sys.path``:
started from a directory that changes between starts, it scans each time, as before.
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import sys
import time
from importlib import import_module
from typing import Any

__all__ = ["Dist", "Entry", "Found", "found", "scan"]

#: the index's layout; another one is not read
FORMAT = 3
#: how old (seconds) every recorded time must be before an index is written
SETTLED = 2.0


class Dist:
    """The distribution an :class:`Entry` comes from: its name (``METADATA``'s ``Name``), read
    from ``source`` (an :mod:`importlib.metadata` distribution) the first time it is asked for."""

    __slots__ = ("_name", "_source")

    def __init__(self, name: str | None = None, source: Any = None) -> None:
        self._name = name
        self._source = source

    @property
    def name(self) -> str:
        if self._name is None:  # ``Distribution.name`` parses METADATA: once
            self._name = str(self._source.name) if self._source is not None else ""
            self._source = None
        return self._name

    def __repr__(self) -> str:
        return f"Dist({self.name!r})"


class Entry:
    """An entry point as the plugin host uses one: ``name``, ``value``, ``group``, ``dist``, and
    :meth:`load`, which does what :meth:`importlib.metadata.EntryPoint.load` does."""

    __slots__ = ("dist", "group", "name", "value")

    def __init__(self, name: str, value: str, group: str, dist: Dist) -> None:
        self.name = name
        self.value = value
        self.group = group
        self.dist = dist

    def load(self) -> Any:
        """The module named by ``value``, or the object ``module:attr.attr`` names in it."""
        match = _pattern().match(self.value)
        module = import_module(match.group("module"))
        attrs = filter(None, (match.group("attr") or "").split("."))
        return functools.reduce(getattr, attrs, module)

    def __repr__(self) -> str:
        return f"Entry(name={self.name!r}, value={self.value!r}, group={self.group!r})"


@functools.cache
def _pattern() -> Any:
    import re

    # importlib.metadata.EntryPoint.pattern
    return re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


class Found:
    """What a start reads: the ``coterie`` entry points (in the order
    :func:`importlib.metadata.entry_points` gives them), and the ``coterie`` distribution's
    ``coterie.builtins`` and ``coterie.provides`` entry points (``None``: no such distribution)."""

    def __init__(
        self, plugins: list[Entry], builtins: list[Entry] | None, provides: list[Entry]
    ) -> None:
        self.plugins = plugins
        self.builtins = builtins
        self.provides = provides

    def rows(self) -> tuple[Any, ...]:
        def row(entries: list[Entry]) -> list[tuple[str, str, str, str]]:
            return [(e.name, e.value, e.group, e.dist.name) for e in entries]

        return (
            row(self.plugins),
            None if self.builtins is None else row(self.builtins),
            row(self.provides),
        )

    @classmethod
    def from_rows(cls, rows: Any) -> Found:
        dists: dict[str, Dist] = {}

        def entries(row: list[tuple[str, str, str, str]]) -> list[Entry]:
            return [
                Entry(name, value, group, dists.setdefault(dist, Dist(dist)))
                for name, value, group, dist in row
            ]

        plugins, builtins, provides = rows
        return cls(
            entries(plugins), None if builtins is None else entries(builtins), entries(provides)
        )


def scan(plugin_group: str, builtin_group: str, provides_group: str) -> Found:
    """Read the entry points with :mod:`importlib.metadata` (what every start did before)."""
    from importlib.metadata import PackageNotFoundError, distribution, entry_points

    dists: dict[int, Dist] = {}

    def dist_of(ep: Any) -> Dist:
        # one per distribution (its entry points share its object); the name is read if asked
        key = id(ep.dist)
        if key not in dists:
            dists[key] = Dist(source=ep.dist) if ep.dist is not None else Dist("")
        return dists[key]

    everything = entry_points()
    plugins = [
        Entry(ep.name, ep.value, ep.group, dist_of(ep))
        for ep in everything.select(group=plugin_group)
    ]
    provides = [
        Entry(ep.name, ep.value, ep.group, dist_of(ep))
        for ep in everything.select(group=provides_group)
    ]
    try:
        own = distribution("coterie")
    except PackageNotFoundError:
        builtins = None
    else:
        dist = Dist(source=own)
        builtins = [
            Entry(ep.name, ep.value, ep.group, dist)
            for ep in own.entry_points.select(group=builtin_group)
        ]
    return Found(plugins, builtins, provides)


# --- the index ---------------------------------------------------------------------------------


def _stat(path: str) -> tuple[int, int, int, int, bool]:
    """(inode, modification time, status change time (both ns), size, is a directory);
    (-1, -1, -1, -1, False): absent. The status change time moves with every write, rename,
    ``chmod`` and ``utime`` too, and cannot be set back."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return (-1, -1, -1, -1, False)
    is_dir = (st.st_mode & 0o170000) == 0o040000
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, is_dir)


def _metadata_children(directory: str) -> list[str]:
    try:
        children = os.listdir(directory)
    except (OSError, ValueError):
        return []
    return sorted(
        child
        for child in children
        if child.lower().endswith((".dist-info", ".egg-info")) or child.lower() == "egg-info"
    )


def _places() -> list[str] | None:
    """``sys.path`` as the scan reads it (absolute), or None when some finder other than the
    standard path finder can find distributions (the index could not see what it finds)."""
    from importlib.machinery import PathFinder

    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None) is not None]
    if finders != [PathFinder]:
        return None
    places = []
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        places.append(os.path.abspath(entry or "."))
    return places


def _fingerprint(places: list[str]) -> list[Any]:
    """Every place and file the scan would look at, with what ``stat`` says of it now: each
    ``sys.path`` entry (a directory's time changes when a metadata directory is added, removed
    or renamed in it), and in each metadata directory the files read from it."""
    seen: list[Any] = []
    for place in places:
        state = _stat(place)
        seen.append((place, state))
        for child in _metadata_children(place) if state[4] else ():
            where = os.path.join(place, child)
            metadata = os.path.join(where, "METADATA")
            files = [os.path.join(where, "entry_points.txt"), metadata]
            if not child.lower().endswith(".dist-info") or _stat(metadata)[0] == -1:
                files.append(os.path.join(where, "PKG-INFO"))  # read when METADATA is not there
            seen.extend((file, _stat(file)) for file in files)
    return seen


def _still(seen: list[Any]) -> bool:
    """Whether every place and file recorded is as it was."""
    return all(_stat(path) == state for path, state in seen)


def _settled(seen: list[Any], now_ns: int) -> bool:
    limit = now_ns - int(SETTLED * 1e9)
    return all(state[1] <= limit and state[2] <= limit for _, state in seen)


def _index_path() -> str | None:
    try:
        from importlib.util import cache_from_source

        return cache_from_source(__file__).removesuffix(".pyc") + ".index"
    except (NotImplementedError, ValueError):
        return None


def _read(path: str) -> Any:
    try:
        with open(path, "rb") as file:
            return marshal.loads(file.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _write(path: str, index: Any) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as file:
            file.write(marshal.dumps(index))
        os.replace(temporary, path)
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def _usable(stored: Any, key: tuple[Any, ...]) -> Found | None:
    """The index's entry points if it is for this interpreter and ``sys.path`` and nothing it
    records has changed; None otherwise (an index of another shape included)."""
    try:
        if stored["key"] != key or not _still(stored["seen"]):
            return None
        found = stored.get("found")  # this process's own scan (only in memory)
        return found if isinstance(found, Found) else Found.from_rows(stored["rows"])
    except (KeyError, IndexError, TypeError, ValueError, AttributeError):
        return None


def found(
    plugin_group: str, builtin_group: str, provides_group: str, *, index: str | None = None
) -> Found:
    """The entry points a start reads: from the index when nothing it records has changed,
    otherwise from :func:`scan` (and the index is written again). The index is also kept in
    memory, so a process that cannot write it (read-only install, ``PYTHONDONTWRITEBYTECODE``)
    still scans once, not at every look. ``index``: the index file (by default beside this
    module's bytecode)."""
    path = index if index is not None else _index_path()
    places = _places()
    groups = (plugin_group, builtin_group, provides_group)
    key = (FORMAT, sys.version, sys.executable, groups, places)
    if path is None or places is None:
        return scan(*groups)
    remembered = _usable(_memory.get(path), key)
    if remembered is None:
        stored = _read(path)
        remembered = _usable(stored, key)
        if remembered is not None:
            _memory[path] = stored
    if remembered is not None:
        return remembered
    now = time.time_ns()
    seen = _fingerprint(places)  # before the scan: whatever changes after it is seen next time
    result = scan(*groups)
    if _settled(seen, now):
        # the next look in this process checks it, even if the file cannot be written
        _memory[path] = {"key": key, "seen": seen, "found": result}
        if not sys.dont_write_bytecode:
            _write(path, {"key": key, "seen": seen, "rows": result.rows()})
    return result


#: the last index made or read in this process, by file: what a start's second look (the
#: built-ins, then every plugin) checks, when the file could not be written
_memory: dict[str, Any] = {}

"""coterie's dataclasses, made without compiling their methods again on every start (issue 18).

``from coterie.records import dataclass`` is :func:`dataclasses.dataclass`, with the same
arguments and the same classes as a result. The difference is only in how long it takes: on
Python 3.11, :mod:`dataclasses` writes each class's ``__init__``, ``__repr__``, ``__eq__``,
``__hash__``, ``__setattr__`` and ``__delattr__`` as source text and compiles each one with
``exec`` — about 1 ms a class on a small VM, ~50 ms of a ``coterie chat`` start, most of it the
compiling (docs/performance.md, "Start-up, fourth round").

While this decorator runs, the ``exec`` that :mod:`dataclasses` calls finds the compiled code of a
text it has seen before in a cache kept beside the bytecode (``__pycache__``, or under
``sys.pycache_prefix``), and runs that code instead of compiling the text. The cache is looked up
by the *whole* source text, so an entry can never stand for other code: a class that changed
writes a different text, which is compiled as before and added. The code is what the same
``exec`` would have compiled (``compile(text, "<string>", "exec")`` with no inherited
``__future__`` flags, as ``exec`` called from :mod:`dataclasses` has none), so every method is the
same function: same code, same globals, same names, the same behaviour in equality, hashing,
``repr``, frozenness and pickling.

The cache follows the bytecode's rules: it is read when present; texts compiled in this process are
written at exit, unless ``sys.dont_write_bytecode`` (``PYTHONDONTWRITEBYTECODE``) is set; it
carries :data:`importlib.util.MAGIC_NUMBER` and its name carries the interpreter's cache tag and
optimisation level, so another Python never reads it; a file it cannot read or write is ignored
(the texts are then compiled, as without it). Other libraries' dataclasses are left alone: the
``exec`` is swapped only while this decorator runs, and only in :mod:`dataclasses` (a class
another thread makes at that very moment gets its methods the same way, with the same result).

For mypy this *is* :func:`dataclasses.dataclass` (re-exported when type checking), so the
dataclass plugin sees every field as before.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import marshal
import os
import sys
import threading
from types import CodeType
from typing import TYPE_CHECKING, Any

__all__ = ["compiled_here", "dataclass", "once"]

#: entries kept in the file at most; past it, only the texts this process used are written
LIMIT = 4096


class _Methods:
    """The compiled code of the methods' texts: read from the file once, written at exit."""

    def __init__(self, path: str | None = None) -> None:
        self.codes: dict[str, CodeType] | None = None
        self.used: set[str] = set()
        self.compiled = 0
        self.path = path  # None: beside this module's bytecode, found on the first read
        self.lock = threading.Lock()
        self.depth = 0
        self.saving = False

    def locate(self) -> str | None:
        try:
            from importlib.util import cache_from_source

            bytecode = cache_from_source(__file__)  # sys.pycache_prefix and -O included
        except (NotImplementedError, ValueError):  # no cache tag: no bytecode cache at all
            return None
        return bytecode.removesuffix(".pyc") + ".methods"

    def read(self) -> dict[str, CodeType]:
        if self.path is None:
            self.path = self.locate()
        if self.path is None:
            return {}
        from importlib.util import MAGIC_NUMBER

        try:
            with open(self.path, "rb") as file:
                data = file.read()
        except OSError:
            return {}
        if data[: len(MAGIC_NUMBER)] != MAGIC_NUMBER:
            return {}
        try:
            codes = marshal.loads(data[len(MAGIC_NUMBER) :])
        except (EOFError, ValueError, TypeError):
            return {}
        if not isinstance(codes, dict) or not all(
            type(k) is str and type(v) is CodeType for k, v in codes.items()
        ):
            return {}
        return codes

    def code(self, source: str) -> CodeType:
        if self.codes is None:
            self.codes = self.read()
        code = self.codes.get(source)
        if code is None:
            # what exec(source, ...) in dataclasses compiles: its module has no __future__
            # imports, so nothing is inherited (this module's `annotations` must not be)
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.codes[source] = code
            self.compiled += 1
            if not self.saving:
                self.saving = True
                import atexit

                atexit.register(self.save)
        self.used.add(source)
        return code

    def save(self) -> None:
        """Write the texts' code beside the bytecode, as the import system writes ``.pyc``
        files: not under ``PYTHONDONTWRITEBYTECODE``, atomically, silently if it cannot."""
        if sys.dont_write_bytecode or self.path is None or self.codes is None:
            return
        from importlib.util import MAGIC_NUMBER

        codes = self.codes
        if len(codes) > LIMIT:  # old classes' texts pile up: keep what is used now
            codes = {source: codes[source] for source in self.used}
        temporary = f"{self.path}.{os.getpid()}.tmp"
        try:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            with open(temporary, "wb") as file:
                file.write(MAGIC_NUMBER + marshal.dumps(codes))
            os.replace(temporary, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


_methods = _Methods()


def _exec(
    source: Any, globals: dict[str, Any] | None = None, locals: Any = None, /, **options: Any
) -> None:
    """:func:`exec` for :mod:`dataclasses`: a source text's code comes from the cache."""
    if type(source) is not str or globals is None or options:
        caller = sys._getframe(1)  # exec's defaults are its caller's namespaces
        if globals is None:
            globals = caller.f_globals
            if locals is None:
                locals = caller.f_locals
        builtins.exec(source, globals, locals, **options)
        return
    builtins.exec(_methods.code(source), globals, locals)


def _swap() -> bool:
    """Make ``dataclasses.exec`` :func:`_exec` while at least one decorator runs (any thread);
    False, and nothing done, if something else already put an ``exec`` there."""
    with _methods.lock:
        present = dataclasses.__dict__.get("exec")
        if present is not None and present is not _exec:
            return False
        _methods.depth += 1
        dataclasses.exec = _exec  # type: ignore[attr-defined]
        return True


def _unswap() -> None:
    with _methods.lock:
        _methods.depth -= 1
        if _methods.depth == 0:
            del dataclasses.exec  # type: ignore[attr-defined]


def compiled_here() -> int:
    """How many method texts this process compiled (0 when the cache had them all)."""
    return _methods.compiled


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
else:

    def dataclass(cls=None, /, **options):
        """:func:`dataclasses.dataclass`, its methods' code from the cache."""

        def wrap(cls):
            if not _swap():
                return dataclasses.dataclass(cls, **options)
            try:
                return dataclasses.dataclass(cls, **options)
            finally:
                _unswap()

        return wrap if cls is None else wrap(cls)


if TYPE_CHECKING:
    from functools import cached_property as once
else:

    class once:
        """A property of an immutable object, worked out on first use and then kept in the
        object's ``__dict__``, where later reads find it as a plain attribute (no call at all).

        For the derived values of frozen dataclasses (an outcome's ``botch``, ``successes``...):
        equality, hashing and ``repr`` look at the fields only, and :func:`dataclasses.replace`
        makes a new object that works its values out again. Unlike
        :func:`functools.cached_property` on Python 3.11 it takes no lock (every roll reads a
        dozen of these)."""

        def __init__(self, function):
            self.function = function
            self.name = function.__name__
            self.__doc__ = function.__doc__

        def __set_name__(self, owner, name):
            self.name = name

        def __get__(self, instance, owner=None):
            if instance is None:
                return self
            value = self.function(instance)
            instance.__dict__[self.name] = value
            return value

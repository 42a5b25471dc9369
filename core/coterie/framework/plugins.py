"""Finding, loading and calling plugins.

Plugins are entry points in the ``coterie`` group. Only those the config enables are imported; an
unknown name is a :class:`~coterie.errors.ConfigError` that lists the installed ones. A plugin that
fails to import, or whose hook raises, is logged with its name and skipped: the others go on.

coterie's own chat features (``!roll``, ``!help``, rooms, sessions, extended actions, teamwork,
contests, the roll log: the :mod:`coterie.play` package) are plugins of the same kind, entry points
in the ``coterie.builtins`` group of the ``coterie`` distribution, always loaded and first. The
framework finds them the way it finds any plugin; it never imports them by name.

coterie's own rule sets and adapters are also *deferred*: the ``coterie.provides`` entry points of
the ``coterie`` distribution say, without importing anything, which rule sets (``variant.NAME``)
and adapters (``adapter.NAME``) each plugin module gives. An enabled plugin whose provisions are
declared there is imported only when one of them is first needed (a room plays its rule set, its
adapter is started, a command lists every rule set): :meth:`PluginHost.load_deferred`, called by
:class:`coterie.framework.catalogue.Catalogue`. A failure to import it is then reported as any
plugin's is, at that point. Third parties' plugins are imported at start, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import logging
import threading
import time
import types
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import pluggy

from coterie.errors import ConfigError
from coterie.framework import hookspecs
from coterie.framework.entrypoints import Entry, found
from coterie.records import dataclass

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

log = logging.getLogger("coterie.plugins")

ENTRY_POINT_GROUP = "coterie"
#: what coterie's own plugins provide, read without importing them: ``variant.NAME`` or
#: ``adapter.NAME`` = the plugin's module (as in the ``coterie`` group)
PROVIDES_GROUP = "coterie.provides"
#: the kinds of provision a deferred plugin may declare
PROVISION_KINDS = ("variant", "adapter")
#: coterie's own always-on plugins (only the ``coterie`` distribution's entry points count)
BUILTIN_GROUP = "coterie.builtins"
#: how long a hook called per message (or an awaitable any hook returns) may run before it is
#: abandoned
HOOK_TIMEOUT = 10.0
#: hooks called for every message: a third party's synchronous implementations run in a worker
#: thread, so one that hangs is cut off by the timeout instead of hanging the bot (coterie's own
#: run on the loop: they only decide whether there is anything to await)
PER_MESSAGE_HOOKS = frozenset({"coterie_after_roll", "coterie_before_reply"})
#: hooks only ever called inside a running command (``CommandContext.roll``), which is under
#: the command's own time limit: coterie's own implementations need no timer of their own
IN_COMMAND_HOOKS = frozenset({"coterie_after_roll"})
#: how many recent failures ``PluginHost.failures`` keeps
MAX_FAILURES_KEPT = 200


class _Impl(NamedTuple):
    """What the host needs of one hook implementation to call it."""

    plugin_name: str
    function: Callable[..., Any]
    argnames: tuple[str, ...]
    #: an ``async def`` function (its call returns a coroutine: never run in a thread)
    coroutine: bool
    #: the arguments it takes, picked from a call's keyword arguments in C (a tuple of them)
    pick: Callable[[dict[str, Any]], tuple[Any, ...]]

    @classmethod
    def of(cls, impl: pluggy.HookImpl) -> _Impl:
        function = impl.function
        names = tuple(impl.argnames)
        return cls(
            impl.plugin_name, function, names, inspect.iscoroutinefunction(function), _picker(names)
        )


def _picker(names: tuple[str, ...]) -> Callable[[dict[str, Any]], tuple[Any, ...]]:
    """``lambda kwargs: tuple(kwargs[n] for n in names)``, in C where it can be (``itemgetter``
    of one name answers the bare value, of none is refused: those two are written out)."""
    if len(names) > 1:
        return itemgetter(*names)
    if names:
        (name,) = names
        return lambda kwargs: (kwargs[name],)
    return lambda kwargs: ()


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded or whose hook raised."""

    plugin: str
    where: str
    error: str


#: what pluggy (1.7 on) can take as a hook implementation; anything else it skips
_HOOKABLE = (types.FunctionType, staticmethod, classmethod, types.MethodType)
#: names the module type itself has: pluggy's static look-up may find those on the type
_MODULE_TYPE_NAMES = frozenset(name for klass in types.ModuleType.__mro__ for name in vars(klass))
_ABSENT = object()


class _Manager(pluggy.PluginManager):
    """pluggy's manager, quicker to tell that a module's name is not a hook implementation.

    Registering a plugin asks :meth:`parse_hookimpl_opts` about every name in ``dir(plugin)``,
    and pluggy answers with :func:`inspect.getattr_static` (~13 µs a name here; the built-ins and
    a rule set are ~900 names, ~12 ms of a start). For a plain module's own names the answer is
    read from the module's dictionary instead, and only where pluggy's is certain: a function
    without the marker (or a ``__func__``) in its ``__dict__`` is none (any pluggy: the marker is
    an attribute of the function); with pluggy's static discovery (1.7 on), neither is any value
    that is not a function or a method. Everything else, pluggy decides as before."""

    _static = hasattr(getattr(pluggy, "_manager", None), "_static_hook_attr")

    #: bumped by every change to the registered implementations (:meth:`PluginHost._impls`
    #: keeps each hook's list until it changes)
    version = 0

    def register(self, plugin: object, name: str | None = None) -> str | None:
        try:
            return super().register(plugin, name)
        finally:
            self.version += 1

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any | None:
        try:
            return super().unregister(plugin, name)
        finally:
            self.version += 1

    def add_hookspecs(self, module_or_class: types.ModuleType | type) -> None:
        try:
            super().add_hookspecs(module_or_class)
        finally:
            self.version += 1

    def parse_hookimpl_opts(self, plugin: Any, name: str) -> pluggy.HookimplOpts | None:
        if type(plugin) is types.ModuleType and name not in _MODULE_TYPE_NAMES:
            value = plugin.__dict__.get(name, _ABSENT)
            if type(value) is types.FunctionType:
                marks = value.__dict__
                if self.project_name + "_impl" not in marks and "__func__" not in marks:
                    return None
            elif value is not _ABSENT and self._static and not issubclass(type(value), _HOOKABLE):
                return None
        return super().parse_hookimpl_opts(plugin, name)


def installed_plugins() -> dict[str, EntryPoint]:
    """Entry points in the ``coterie`` group, by name."""
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _installed() -> tuple[dict[str, Entry], dict[str, list[tuple[str, str]]]]:
    """The ``coterie`` entry points by name, and what the ``coterie`` distribution's
    ``coterie.provides`` entry points declare, by plugin module: ``[(kind, name), ...]``. One scan
    of the installed distributions (each scan reads every distribution's entry points), or none
    when nothing it would read has changed since the last (:mod:`coterie.framework.entrypoints`)."""
    now = found(ENTRY_POINT_GROUP, BUILTIN_GROUP, PROVIDES_GROUP)
    plugins = {ep.name: ep for ep in now.plugins}
    provides: dict[str, list[tuple[str, str]]] = {}
    for ep in now.provides:
        kind, _, name = ep.name.partition(".")
        if kind in PROVISION_KINDS and name and _builtin(ep):
            provides.setdefault(ep.value, []).append((kind, name))
    return plugins, provides


def _builtin(entry_point: Entry) -> bool:
    dist = getattr(entry_point, "dist", None)
    return dist is not None and dist.name == "coterie"  # read once per distribution


@functools.cache
def builtin_plugins() -> tuple[Entry, ...]:
    """coterie's own built-in plugins (the ``coterie.builtins`` entry points of the ``coterie``
    distribution), by name. Looked up once per process: installed distributions don't change
    while it runs."""
    builtins = found(ENTRY_POINT_GROUP, BUILTIN_GROUP, PROVIDES_GROUP).builtins
    return tuple(sorted(builtins or (), key=lambda ep: ep.name))


class PluginHost:
    """A pluggy manager that loads only enabled plugins and isolates their failures."""

    def __init__(self) -> None:
        self.pm = _Manager("coterie")
        #: hook → (the manager's version, its implementations in calling order): :meth:`_impls`
        self._impl_cache: dict[str, tuple[int, tuple[_Impl, ...]]] = {}
        self.pm.add_hookspecs(hookspecs)
        #: the most recent failures (bounded: a hook failing on every roll must not grow memory)
        self.failures: deque[PluginFailure] = deque(maxlen=MAX_FAILURES_KEPT)
        #: failures per plugin since start
        self.failure_counts: Counter[str] = Counter()
        #: (plugin, hook) → when a synchronous call that timed out started; cleared when it
        #: returns. While it hangs, later calls of that implementation are skipped at once, so a
        #: hung hook holds at most one thread.
        self.hung: dict[tuple[str, str], float] = {}
        self._hung_lock = threading.Lock()
        #: plugins shipped with coterie (the built-ins and the ``coterie`` distribution's rule
        #: sets and adapters): their command handlers run on the event loop as they are; every
        #: other plugin's are isolated (:mod:`coterie.framework.guard`)
        self.trusted: set[str] = set()
        #: enabled plugins not imported yet (coterie's own rule sets and adapters), by name, with
        #: what each provides (``[(kind, name), ...]``): :meth:`load_deferred` imports one
        self.deferred: dict[str, tuple[Entry, list[tuple[str, str]]]] = {}
        #: every plugin registered or deferred, in the order an eager start registers them
        self._order: list[str] = []
        for entry_point in builtin_plugins():
            try:
                plugin = entry_point.load()
            except Exception as error:
                self._fail(entry_point.value, "load", error)
                continue
            self.register(plugin, entry_point.value, trusted=True)

    def register(self, plugin: object, name: str, *, trusted: bool = False) -> None:
        """Register an already-imported plugin object (a module or an instance). ``trusted``
        is for coterie's own plugins only: a third party's command handlers are isolated."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as error:  # pluggy validates hook signatures here
            self._fail(name, "register", error)
            return
        if name not in self._order:
            self._order.append(name)
        if trusted:
            self.trusted.add(name)
        wrappers = [
            impl.function.__name__
            for caller in self.pm.get_hookcallers(plugin) or []
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin and (impl.hookwrapper or impl.wrapper)
        ]
        if wrappers:  # core calls implementations one by one, so a wrapper would never wrap
            self.pm.unregister(plugin)
            self._fail(name, "register", TypeError(f"hook wrappers are not supported: {wrappers}"))

    def load(self, enable: Sequence[str], *, defer: bool = False) -> None:
        """Import and register the enabled entry points (``"*"`` enables every installed one);
        with ``defer`` (what the app does), those whose provisions coterie declares
        (``coterie.provides``) are only noted, and imported when needed (:meth:`load_deferred`)."""
        available, provides = _installed()
        wanted = list(available) if "*" in enable else list(dict.fromkeys(enable))
        unknown = [name for name in wanted if name not in available]
        if unknown:
            names = ", ".join(sorted(available)) or "none"
            raise ConfigError(
                f"plugins.enable: unknown plugin {', '.join(map(repr, unknown))}; "
                f"installed plugins: {names}"
            )
        # coterie's own plugins load first, so their names win over a third party's duplicate
        wanted.sort(key=lambda name: (not _builtin(available[name]), name))
        for name in wanted:
            provided = provides.get(available[name].value) if _builtin(available[name]) else None
            if defer and provided and self.pm.get_plugin(name) is None:
                self.deferred[name] = (available[name], provided)
                self._order.append(name)
                continue
            self._load(name, available[name])

    def _load(self, name: str, entry_point: Entry) -> None:
        try:
            plugin = entry_point.load()
        except Exception as error:
            self._fail(name, "load", error)
            return
        self.register(plugin, name, trusted=_builtin(entry_point))

    def load_deferred(self, name: str) -> bool:
        """Import and register the deferred plugin ``name`` now (once; a failure is reported as
        at start); whether it is registered."""
        pending = self.deferred.pop(name, None)
        if pending is not None:
            self._load(name, pending[0])
        return self.pm.get_plugin(name) is not None

    def call_some(
        self, plugins: Collection[str], hook: str, **kwargs: Any
    ) -> list[tuple[str, Any]]:
        """:meth:`call`, for these plugins' implementations only."""
        return self.call(hook, _only=plugins, **kwargs)

    @property
    def plugin_names(self) -> list[str]:
        """Registered plugins and the enabled ones not imported yet (:attr:`deferred`), in the
        order an eager start registers them (built-ins first, then coterie's own, then the
        others; each group by name)."""
        return [n for n in self._order if n in self.deferred or self.pm.get_plugin(n) is not None]

    def _fail(self, plugin: str, where: str, error: BaseException) -> None:
        message = f"{type(error).__name__}: {error}"
        self.failures.append(PluginFailure(plugin, where, message))
        self.failure_counts[plugin] += 1
        log.error("plugin %s failed in %s: %s", plugin, where, message, exc_info=error)

    def _impls(self, hook: str) -> tuple[_Impl, ...]:
        """The implementations of ``hook`` in calling order (last registered first, as pluggy
        calls them), kept until a plugin is registered or unregistered: every message calls
        a handful of hooks, and pluggy copies its list on each ask. (The callers below look
        the kept list up themselves first: this is a call on every hook call saved.)"""
        version = self.pm.version
        kept = self._impl_cache.get(hook)
        if kept is not None and kept[0] == version:
            return kept[1]
        caller: pluggy.HookCaller = getattr(self.pm.hook, hook)
        impls = tuple(_Impl.of(impl) for impl in reversed(caller.get_hookimpls()))
        self._impl_cache[hook] = (version, impls)
        return impls

    def call(
        self, hook: str, _only: Collection[str] | None = None, **kwargs: Any
    ) -> list[tuple[str, Any]]:
        """Call each implementation of ``hook`` on its own; return ``(plugin, result)`` pairs
        for those that did not raise and returned something."""
        results: list[tuple[str, Any]] = []
        for impl in self._impls(hook):
            if _only is not None and impl.plugin_name not in _only:
                continue
            try:
                value = impl.function(*impl.pick(kwargs))
            except Exception as error:
                self._fail(impl.plugin_name, hook, error)
                continue
            if value is not None:
                results.append((impl.plugin_name, value))
        return results

    async def call_async(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call each implementation of ``hook`` on its own and await an awaitable result, each
        within :data:`HOOK_TIMEOUT`; return ``(plugin, result)`` pairs for those that did not
        fail and returned something. Implementations run one after another (each sees what the
        ones before it changed). A third party's synchronous implementations of
        :data:`PER_MESSAGE_HOOKS` run in a worker thread, so one that hangs is abandoned after
        the timeout too."""
        results: list[tuple[str, Any]] = []
        kept = self._impl_cache.get(hook)
        impls = kept[1] if kept is not None and kept[0] == self.pm.version else self._impls(hook)
        if not impls:  # the usual case for the per-message hooks: nothing to call
            return results
        threaded = hook in PER_MESSAGE_HOOKS
        for impl in impls:
            plugin = impl.plugin_name
            args = impl.pick(kwargs)
            timeout = HOOK_TIMEOUT
            try:
                if threaded and not impl.coroutine and plugin not in self.trusted:
                    value = await self._in_thread(plugin, hook, impl.function, args, timeout)
                else:
                    value = impl.function(*args)
                if value is None:
                    continue
                if (
                    inspect.isawaitable(value)
                    and hook in IN_COMMAND_HOOKS
                    and plugin in self.trusted
                ):
                    value = await value  # coterie's own, under the command's deadline (~5 µs less)
                elif inspect.isawaitable(value):
                    # ``asyncio.timeout``, not ``wait_for``: on Python 3.11 ``wait_for`` loses a
                    # cancellation that arrives as the awaitable finishes, and a shutdown then
                    # never reaches the adapter's loop (tests/test_supervise.py hung so)
                    async with asyncio.timeout(timeout):
                        value = await value
            except Exception as error:
                if isinstance(error, TimeoutError) and not str(error):
                    error = TimeoutError(f"timed out after {timeout:g} s")
                self._fail(plugin, hook, error)
                continue
            results.append((plugin, value))
        return results

    async def first_result(self, hook: str, **kwargs: Any) -> Any:
        """Call the implementations of ``hook`` one after another until one returns something
        other than ``None`` (an awaitable is awaited first) and return that, else ``None``.

        For hooks that *take over* a command (``coterie_roll_command``): unlike :meth:`call`, an
        exception is not isolated here but reaches the command, where a ``UsageError`` becomes
        the user's friendly error and anything else the command's incident, as if the command
        itself had raised it."""
        kept = self._impl_cache.get(hook)
        impls = kept[1] if kept is not None and kept[0] == self.pm.version else self._impls(hook)
        for impl in impls:
            value = impl.function(*impl.pick(kwargs))
            if value is None:  # (``isawaitable(None)`` asks an ABC: the slow way to say no)
                continue
            if inspect.isawaitable(value):
                value = await value
            if value is not None:
                return value
        return None

    async def _in_thread(
        self, plugin: str, hook: str, function: Any, args: Sequence[Any], timeout: float | None
    ) -> Any:
        """``function(*args)`` in a daemon thread (a hung one never blocks the process from
        exiting), waited for at most ``timeout`` seconds (``None``: until the caller is
        cancelled). Abandoned unfinished (timed out or cancelled), it is recorded in
        :attr:`hung` until it returns."""
        key = (plugin, hook)
        if key in self.hung:
            waited = time.monotonic() - self.hung[key]
            raise TimeoutError(
                f"skipped: an earlier call has not returned after {waited:.0f} s (hung)"
            )
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()
        started = time.monotonic()
        finished = threading.Event()

        def settle(value: Any, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def work() -> None:
            try:
                value, error = context.run(function, *args), None
            except BaseException as raised:  # delivered to the awaiting side
                value, error = None, raised
            with self._hung_lock:
                finished.set()
                if self.hung.get(key) == started:
                    del self.hung[key]
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
                loop.call_soon_threadsafe(settle, value, error)

        thread = threading.Thread(target=work, name=f"coterie-hook-{plugin}", daemon=True)
        thread.start()
        try:
            async with asyncio.timeout(timeout):  # (not ``wait_for``: see ``call_async``)
                return await future
        except (TimeoutError, asyncio.CancelledError):
            with self._hung_lock:
                if not finished.is_set():
                    self.hung[key] = started
            raise

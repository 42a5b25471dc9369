"""Finding, loading and calling plugins.

Plugins are entry points in the ``coterie`` group. Only those the config enables are imported; an
unknown name is a :class:`~coterie.errors.ConfigError` that lists the installed ones. A plugin that
fails to import, or whose hook raises, is logged with its name and skipped: the others go on.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import pluggy

from coterie import hookspecs
from coterie.errors import ConfigError

log = logging.getLogger("coterie.plugins")

ENTRY_POINT_GROUP = "coterie"
#: how long an awaitable returned by a hook may run before it is abandoned
HOOK_TIMEOUT = 10.0
#: how many recent failures ``PluginHost.failures`` keeps
MAX_FAILURES_KEPT = 200


@dataclass(frozen=True)
class PluginFailure:
    """A plugin that could not be loaded or whose hook raised."""

    plugin: str
    where: str
    error: str


def installed_plugins() -> dict[str, EntryPoint]:
    """Entry points in the ``coterie`` group, by name."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _builtin(entry_point: EntryPoint) -> bool:
    dist = getattr(entry_point, "dist", None)
    return dist is not None and dist.name == "coterie"


class PluginHost:
    """A pluggy manager that loads only enabled plugins and isolates their failures."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager("coterie")
        self.pm.add_hookspecs(hookspecs)
        #: the most recent failures (bounded: a hook failing on every roll must not grow memory)
        self.failures: deque[PluginFailure] = deque(maxlen=MAX_FAILURES_KEPT)
        #: failures per plugin since start
        self.failure_counts: Counter[str] = Counter()
        from coterie import builtins

        self.pm.register(builtins, name="coterie.builtins")

    def register(self, plugin: object, name: str) -> None:
        """Register an already-imported plugin object (a module or an instance)."""
        try:
            self.pm.register(plugin, name=name)
        except Exception as error:  # pluggy validates hook signatures here
            self._fail(name, "register", error)
            return
        wrappers = [
            impl.function.__name__
            for caller in self.pm.get_hookcallers(plugin) or []
            for impl in caller.get_hookimpls()
            if impl.plugin is plugin and (impl.hookwrapper or impl.wrapper)
        ]
        if wrappers:  # core calls implementations one by one, so a wrapper would never wrap
            self.pm.unregister(plugin)
            self._fail(name, "register", TypeError(f"hook wrappers are not supported: {wrappers}"))

    def load(self, enable: Sequence[str]) -> None:
        """Import and register the enabled entry points (``"*"`` enables every installed one)."""
        available = installed_plugins()
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
            try:
                plugin = available[name].load()
            except Exception as error:
                self._fail(name, "load", error)
                continue
            self.register(plugin, name)

    @property
    def plugin_names(self) -> list[str]:
        """Registered plugins in the order they were registered (built-ins first)."""
        return [name for name, _ in self.pm.list_name_plugin() if name]

    def _fail(self, plugin: str, where: str, error: BaseException) -> None:
        message = f"{type(error).__name__}: {error}"
        self.failures.append(PluginFailure(plugin, where, message))
        self.failure_counts[plugin] += 1
        log.error("plugin %s failed in %s: %s", plugin, where, message, exc_info=error)

    def _impls(self, hook: str) -> Iterable[pluggy.HookImpl]:
        caller: pluggy.HookCaller = getattr(self.pm.hook, hook)
        return reversed(caller.get_hookimpls())

    def call(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call each implementation of ``hook`` on its own; return ``(plugin, result)`` pairs
        for those that did not raise and returned something."""
        results: list[tuple[str, Any]] = []
        for impl in self._impls(hook):
            try:
                value = impl.function(*(kwargs[arg] for arg in impl.argnames))
            except Exception as error:
                self._fail(impl.plugin_name, hook, error)
                continue
            if value is not None:
                results.append((impl.plugin_name, value))
        return results

    async def call_async(self, hook: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Like :meth:`call`, then await every awaitable result (each with a timeout)."""
        results: list[tuple[str, Any]] = []
        for plugin, value in self.call(hook, **kwargs):
            if inspect.isawaitable(value):
                try:
                    value = await asyncio.wait_for(value, HOOK_TIMEOUT)
                except Exception as error:
                    if isinstance(error, TimeoutError):
                        error = TimeoutError(f"timed out after {HOOK_TIMEOUT:g} s")
                    self._fail(plugin, hook, error)
                    continue
            results.append((plugin, value))
        return results

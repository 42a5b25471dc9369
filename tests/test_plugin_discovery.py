"""The plugin host's pluggy manager finds exactly the hook implementations pluggy's own finds,
only quicker for a module's names that cannot be one (issue 18, start-up)."""

from __future__ import annotations

import functools
import importlib
import types
from typing import Any, ClassVar

import pluggy
import pytest

from coterie import hookimpl
from coterie.framework import hookspecs
from coterie.framework.plugins import PluginHost, _installed, _Manager, builtin_plugins


def _modules() -> list[types.ModuleType]:
    """Every plugin module installed here: the built-ins, the rule sets, the adapters, the
    examples' (each imported, as `coterie plugins` does)."""
    names = [ep.value for ep in builtin_plugins()]
    names += [ep.value for ep in _installed()[0].values()]
    return [importlib.import_module(name) for name in dict.fromkeys(names)]


def _answers(manager: pluggy.PluginManager, plugin: Any) -> dict[str, Any]:
    return {name: manager.parse_hookimpl_opts(plugin, name) for name in dir(plugin)}


@pytest.mark.parametrize("module", _modules(), ids=lambda m: m.__name__)
def test_every_installed_plugin_module_gets_pluggys_answers(module):
    ours, theirs = _Manager("coterie"), pluggy.PluginManager("coterie")
    assert _answers(ours, module) == _answers(theirs, module)
    assert any(value is not None for value in _answers(ours, module).values())


class _Descriptor:
    def __get__(self, instance: object, owner: type | None = None) -> object:
        return self


class _Loud:
    """A module-level object that must not be asked for attributes while looking for hooks."""

    asked: ClassVar[list[str]] = []

    def __getattr__(self, name: str) -> object:
        _Loud.asked.append(name)
        return {"specname": None}


def _exotic() -> types.ModuleType:
    module = types.ModuleType("exotic_plugin")

    def coterie_startup(app: object) -> None:
        pass

    def plain(app: object) -> None:
        pass

    def with_func(app: object) -> None:
        pass

    with_func.__func__ = hookimpl(coterie_startup)  # type: ignore[attr-defined]

    class Holder:
        pass

    values = {
        "coterie_startup": hookimpl(coterie_startup),
        "plain": plain,
        "with_func": with_func,
        "static_marked": hookimpl(staticmethod(plain)),
        "static_inside": staticmethod(hookimpl(functools.wraps(plain)(lambda app: None))),
        "class_marked": hookimpl(classmethod(lambda cls, app: None)),
        "partial_marked": hookimpl(functools.partial(plain)),
        "class_as_plugin_value": hookimpl(Holder),
        "descriptor_marked": hookimpl(_Descriptor()),
        "loud": _Loud(),
        "number": 3,
        "text": "coterie_startup",
        "bound": plain.__get__(1),
        "bound_marked": hookimpl(functools.wraps(plain)(lambda app: None)).__get__(1),
        "__annotations__": {"x": int},
    }
    for name, value in values.items():
        setattr(module, name, value)
    return module


def test_odd_values_get_pluggys_answers_too():
    module = _exotic()
    _Loud.asked.clear()
    ours = _answers(_Manager("coterie"), module)
    assert _Loud.asked == []  # nothing of ours ran a module object's code
    theirs = _answers(pluggy.PluginManager("coterie"), module)
    assert ours == theirs
    assert ours["coterie_startup"] is not None and ours["plain"] is None


def test_a_registered_module_has_the_same_hook_implementations():
    def impls(manager: pluggy.PluginManager) -> list[tuple[str, str, str]]:
        manager.add_hookspecs(hookspecs)
        for module in _modules():
            manager.register(module, name=module.__name__)
        return [
            (name, impl.plugin_name, impl.function.__qualname__, repr(impl.opts))
            for name in sorted(vars(manager.hook))
            for impl in getattr(manager.hook, name).get_hookimpls()
        ]

    ours = impls(_Manager("coterie"))
    assert len(ours) > 40 and ours == impls(pluggy.PluginManager("coterie"))


def test_the_host_uses_it():
    assert type(PluginHost().pm) is _Manager

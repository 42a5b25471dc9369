"""What the plugins give the app: rule sets, commands, adapters and character templates, collected
plugin by plugin from the discovery hooks (``coterie_variants``, ``coterie_commands``,
``coterie_adapters``, ``coterie_character_templates``).

A deferred plugin (coterie's own rule sets and adapters, :mod:`coterie.framework.plugins`) is
imported the first time one of its rule sets or adapters is asked for by name, or when every one
is (iterating :attr:`Catalogue.variants`, listing every command): its discoveries are collected
then. ``"v5" in app.variants`` imports the plugin that declares ``v5`` (so the answer is true
only if it really loads); ``app.variants["revised"]`` likewise; listing the names imports all.

Precedence is what it would be if every plugin were imported at start, built-ins first, then
coterie's own, then third parties: a third party's rule set, adapter or character template with a
name a deferred plugin declares, or its command for such a rule set, makes that plugin load first,
so the third party's is the duplicate that is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, MutableMapping
from typing import Any, TypeVar

from coterie.framework.adapter import Adapter
from coterie.framework.characters import CharacterTemplate
from coterie.framework.commands import Command
from coterie.framework.plugins import PluginHost
from coterie.framework.variant import Variant

T = TypeVar("T")
#: what a plugin's hook gave: ``[(plugin, items), ...]``
Listed = list[tuple[str, list[Any]]]


class Registry(MutableMapping[str, T]):
    """Items by name (rule sets, adapter classes) where some names are only declared, by deferred
    plugins: asking for such a name, or for all of them, loads its plugin first."""

    def __init__(self, load: Callable[[str], None], order: Callable[[], list[str]]) -> None:
        self._items: dict[str, T] = {}
        #: declared names not loaded yet → the deferred plugin that declares each
        self._pending: dict[str, str] = {}
        #: the plugin that gave each item
        self._by: dict[str, str] = {}
        self._load = load
        self._order = order

    def add(self, name: str, item: T, plugin: str) -> None:
        self[name] = item
        self._by[name] = plugin

    def declare(self, name: str, plugin: str) -> None:
        if name not in self._items:
            self._pending.setdefault(name, plugin)

    def forget(self, plugin: str) -> None:
        """``plugin`` was loaded (or failed to): what it declares is pending no more."""
        for name in [n for n, p in self._pending.items() if p == plugin]:
            del self._pending[name]

    def settle(self, name: str) -> None:
        plugin = self._pending.get(name)
        if plugin is not None:
            self._load(plugin)

    def settle_all(self) -> None:
        while self._pending:
            self._load(next(iter(self._pending.values())))

    def __getitem__(self, name: str) -> T:
        if self._pending:  # (:meth:`settle`, when anything is still to load)
            self.settle(name)
        return self._items[name]

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.settle(name)
        return name in self._items

    def __setitem__(self, name: str, item: T) -> None:
        self._pending.pop(name, None)
        self._items[name] = item

    def __delitem__(self, name: str) -> None:
        del self._items[name]

    def __iter__(self) -> Iterator[str]:
        """The names in the order an eager start collects them (by plugin, then as given)."""
        self.settle_all()
        rank = {name: index for index, name in enumerate(self._order())}
        return iter(sorted(self._items, key=lambda n: rank.get(self._by.get(n, ""), len(rank))))

    def __len__(self) -> int:
        self.settle_all()
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self._items!r}, pending={sorted(self._pending)!r})"


class Catalogue:
    """The app's rule sets, commands, adapter classes and character templates, collected from the
    plugins of ``host``; ``bad(plugin, hook, problem)`` reports what a plugin got wrong."""

    def __init__(self, host: PluginHost, bad: Callable[[str, str, str], None]) -> None:
        self.host = host
        self._bad = bad
        order = lambda: host.plugin_names  # noqa: E731
        self.variants: Registry[Variant[Any, Any]] = Registry(self.load, order)
        self.adapter_classes: Registry[type[Adapter]] = Registry(self.load, order)
        #: every loaded command, in the order collected (:meth:`all_commands` loads them all)
        self.commands: list[Command] = []
        #: each rule set's character template, by rule set
        self.character_templates: dict[str, CharacterTemplate] = {}
        #: the plugin that gave each of :attr:`commands`
        self._by: list[str] = []
        #: plugins whose discoveries are collected
        self._collected: set[str] = set()
        for plugin, (_, provided) in list(host.deferred.items()):
            for kind, name in provided:
                (self.variants if kind == "variant" else self.adapter_classes).declare(name, plugin)
        self._collect(self.host.plugin_names)

    def listed(self, hook: str, plugins: Collection[str] | None = None) -> Listed:
        """Each plugin's (or only ``plugins``') result of a list-returning hook. A result that is
        not iterable, or whose iteration raises (a generator hook), is that plugin's failure, not
        the app's. Results come in registration order, so on a duplicate name the plugin loaded
        first keeps it."""
        order = {name: index for index, name in enumerate(self.host.plugin_names)}
        calls = self.host.call(hook) if plugins is None else self.host.call_some(plugins, hook)
        results: Listed = []
        for name, value in calls:
            try:
                results.append((name, list(value)))
            except Exception as error:
                self.host._fail(name, hook, error)
        return sorted(results, key=lambda pair: order.get(pair[0], len(order)))

    def load(self, plugin: str) -> None:
        """Import the deferred ``plugin`` and collect what it gives."""
        registered = self.host.load_deferred(plugin)
        self.variants.forget(plugin)
        self.adapter_classes.forget(plugin)
        if registered:
            self._collect([plugin])

    def all_commands(self) -> list[Command]:
        """Every command, deferred plugins' included (they are loaded), in the order an eager
        start collects them: by plugin (:attr:`PluginHost.plugin_names`), then as declared."""
        self.variants.settle_all()
        self.adapter_classes.settle_all()
        rank = {name: index for index, name in enumerate(self.host.plugin_names)}
        order = sorted(range(len(self.commands)), key=lambda i: rank.get(self._by[i], len(rank)))
        return [self.commands[i] for i in order]

    def _collect(self, names: Collection[str]) -> None:
        # a plugin loaded while these are collected (a deferred one, by name) is collected then
        todo = {
            name
            for name in names
            if name not in self._collected and self.host.pm.get_plugin(name) is not None
        }
        self._collected |= todo
        for name, variants in self.listed("coterie_variants", todo):
            for variant in variants:
                if not isinstance(variant, Variant):
                    self._bad(name, "coterie_variants", f"{variant!r} is not a Variant")
                elif variant.name in self.variants:
                    self._bad(name, "coterie_variants", f"variant {variant.name!r} exists")
                else:
                    self.variants.add(variant.name, variant, name)
        for name, commands in self.listed("coterie_commands", todo):
            for command in commands:
                self._add_command(name, command)
        for name, classes in self.listed("coterie_adapters", todo):
            for cls in classes:
                if not (isinstance(cls, type) and issubclass(cls, Adapter)):
                    self._bad(name, "coterie_adapters", f"{cls!r} is not an Adapter class")
                elif cls.name in self.adapter_classes:
                    self._bad(name, "coterie_adapters", f"adapter {cls.name!r} exists")
                else:
                    self.adapter_classes.add(cls.name, cls, name)
        for name, templates in self.listed("coterie_character_templates", todo):
            for template in templates:
                if not isinstance(template, CharacterTemplate):
                    self._bad(
                        name, "coterie_character_templates", f"{template!r} is not a template"
                    )
                    continue
                self.variants.settle(template.variant)  # a deferred plugin's template comes first
                if template.variant in self.character_templates:
                    self._bad(
                        name, "coterie_character_templates", f"{template.variant} has one already"
                    )
                else:
                    self.character_templates[template.variant] = template
        for name, variant in self.variants._items.items():  # what `!help` and `supports` read
            variant.character_template = self.character_templates.get(name)

    def _add_command(self, plugin: str, command: Any) -> None:
        if not isinstance(command, Command):
            self._bad(plugin, "coterie_commands", f"{command!r} is not a Command")
            return
        for variant in command.variants:  # a deferred plugin's commands for it come first
            self.variants.settle(variant)
        clash = next((c for c in self.commands if c.clashes_with(command)), None)
        if clash is not None:
            self._bad(
                plugin,
                "coterie_commands",
                f"command {command.name!r} is taken by plugin {clash.plugin!r}",
            )
            return
        if not command.plugin:
            from dataclasses import replace

            command = replace(command, plugin=plugin)
        self.commands.append(command)
        self._by.append(plugin)

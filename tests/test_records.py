"""``coterie.records.dataclass`` makes the classes :func:`dataclasses.dataclass` makes, with their
methods' compiled code kept between starts (issue 18, docs/performance.md "Start-up, fourth
round")."""

from __future__ import annotations

import copy
import dataclasses
import marshal
import pickle
import re
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path
from typing import Any, ClassVar

import pytest

from chat_probe import cached_env, chat_probe
from coterie import records
from coterie.records import dataclass

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")


# the same class bodies, made by each decorator (module level: pickle finds them by name)
def _bodies(decorate: Any) -> dict[str, type]:
    @decorate(frozen=True)
    class Point:
        """A frozen point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @decorate
    class Bag:
        items: list[int] = dataclasses.field(default_factory=list)
        label: str = "bag"
        count: ClassVar[int] = 0

    @decorate(frozen=True, kw_only=True)
    class Keyed:
        name: str
        weight: float = dataclasses.field(default=1.0, compare=False)
        hidden: str = dataclasses.field(default="", repr=False)

    @decorate(order=True)
    class Ordered:
        rank: int
        name: str = ""

    @decorate(frozen=True)
    class Child(Point):
        z: int = 0

    @decorate(eq=False)
    class Identity:
        value: int

    return {c.__name__: c for c in (Point, Bag, Keyed, Ordered, Child, Identity)}


OURS = _bodies(dataclass)
THEIRS = _bodies(dataclasses.dataclass)
for _name in OURS:  # picklable by name
    OURS[_name].__qualname__ = f"Ours{_name}"
    THEIRS[_name].__qualname__ = f"Theirs{_name}"
    globals()[f"Ours{_name}"] = OURS[_name]
    globals()[f"Theirs{_name}"] = THEIRS[_name]


def _functions(cls: type) -> dict[str, Any]:
    return {name: cls.__dict__[name] for name in METHODS if callable(cls.__dict__.get(name))}


@pytest.mark.parametrize("name", sorted(OURS))
def test_the_classes_and_their_methods_are_the_standard_ones(name):
    ours, theirs = OURS[name], THEIRS[name]
    assert dataclasses.is_dataclass(ours)
    assert ours.__dataclass_params__.__repr__() == theirs.__dataclass_params__.__repr__()
    assert [repr(f) for f in dataclasses.fields(ours)] == [
        repr(f) for f in dataclasses.fields(theirs)
    ]
    assert ours.__match_args__ == theirs.__match_args__
    assert ours.__doc__.replace("Ours", "") == theirs.__doc__  # type: ignore[union-attr]
    mine, standard = _functions(ours), _functions(theirs)
    assert sorted(mine) == sorted(standard)
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)
    for method in mine:
        a, b = mine[method], standard[method]
        a = getattr(a, "__wrapped__", a)  # __repr__ is wrapped by reprlib's guard
        b = getattr(b, "__wrapped__", b)
        assert a.__code__ == b.__code__, method  # the very code exec would have compiled
        assert a.__code__.co_filename == "<string>"
        assert a.__globals__ is sys.modules[__name__].__dict__
        assert a.__defaults__ == b.__defaults__ and a.__kwdefaults__ == b.__kwdefaults__
        assert a.__annotations__ == b.__annotations__, method
    assert "exec" not in vars(dataclasses)  # the swap is undone


def test_they_behave_as_the_standard_ones():
    P, Q = OURS["Point"], THEIRS["Point"]
    p = P(1, 2, ("a",))
    assert p == P(1, 2, ("a",)) and p != P(1, 3) and hash(p) == hash(P(1, 2, ("a",)))
    assert repr(p).replace("Ours", "") == repr(Q(1, 2, ("a",))).replace("Theirs", "")
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'x'"):
        p.x = 5  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del p.y  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        P()  # type: ignore[call-arg]
    assert dataclasses.replace(p, y=9) == P(1, 9, ("a",))
    assert dataclasses.asdict(p) == {"x": 1, "y": 2, "tags": ("a",)}
    assert pickle.loads(pickle.dumps(p)) == p and copy.deepcopy(p) == p
    bag = OURS["Bag"]()
    bag.items.append(1)
    assert OURS["Bag"]().items == [] and bag.__hash__ is None
    keyed = OURS["Keyed"](name="n", weight=2.0, hidden="h")
    assert keyed == OURS["Keyed"](name="n", weight=3.0, hidden="h")  # weight: compare=False
    assert keyed != OURS["Keyed"](name="n", weight=2.0, hidden="x")
    assert "hidden" not in repr(keyed)
    with pytest.raises(TypeError):
        OURS["Keyed"]("n")  # type: ignore[misc]
    assert OURS["Ordered"](1) < OURS["Ordered"](2, "a")
    assert OURS["Child"](1, z=3).z == 3 and OURS["Child"](1) != P(1)
    i = OURS["Identity"](1)
    assert i != OURS["Identity"](1) and i == i


def _use_methods(
    monkeypatch: pytest.MonkeyPatch, path: Path, *, write: bool | None = None
) -> records._Methods:
    """A methods cache kept at ``path``, made the one ``dataclass`` uses for this test; with
    ``write``, bytecode writing on or off."""
    methods = records._Methods(str(path))
    monkeypatch.setattr(records, "_methods", methods)
    if write is not None:
        monkeypatch.setattr(sys, "dont_write_bytecode", not write)
    return methods


def test_a_text_is_compiled_once_then_read_back(tmp_path, monkeypatch):
    path = tmp_path / "records.methods"
    first = _use_methods(monkeypatch, path, write=True)

    def make() -> type:
        @dataclass(frozen=True)
        class Fresh:
            alpha_field_for_this_test: int
            beta: str = "b"

        return Fresh

    a = make()
    assert first.compiled == 6  # __init__, __repr__, __eq__, __hash__, __setattr__, __delattr__
    make()
    assert first.compiled == 6  # the same texts: from memory
    first.save()
    assert path.read_bytes().startswith(MAGIC_NUMBER)

    second = _use_methods(monkeypatch, path)
    b = make()
    assert second.compiled == 0  # every text came from the file
    assert b.__init__.__code__ == a.__init__.__code__
    assert (
        b(1) == b(1)
        and b(1) != b(2)
        and repr(b(1)).endswith("Fresh(alpha_field_for_this_test=1, beta='b')")
    )

    # a changed class writes another text: compiled, not mistaken for the old one
    @dataclass(frozen=True)
    class Fresh:
        alpha_field_for_this_test: int
        beta: str = "c"
        gamma: int = 0

    assert second.compiled > 0
    assert Fresh(1).gamma == 0 and Fresh(1, "x", 2) != Fresh(1, "x", 3)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"\x00\x01\x02\x03garbage",
        MAGIC_NUMBER + b"\xff\xfe not marshal",
        MAGIC_NUMBER + marshal.dumps({"text": "not code"}),
        MAGIC_NUMBER + marshal.dumps(["a list"]),
        b"\x00\x00\r\n" + marshal.dumps({}),  # another Python's magic number
    ],
)
def test_a_file_it_cannot_use_is_ignored(tmp_path, monkeypatch, content):
    path = tmp_path / "records.methods"
    path.write_bytes(content)
    methods = _use_methods(monkeypatch, path)

    @dataclass(frozen=True)
    class Fine:
        value: int

    assert methods.compiled == 6 and Fine(1) == Fine(1) and hash(Fine(1)) == hash(Fine(1))


def test_a_bad_entry_cannot_stand_for_other_code(tmp_path, monkeypatch):
    # the key is the whole text: an entry for one text is never used for another
    path = tmp_path / "records.methods"
    wrong = compile(
        "def __create_fn__():\n def __init__(self):\n  pass\n return __init__", "<s>", "exec"
    )
    path.write_bytes(MAGIC_NUMBER + marshal.dumps({"some other text": wrong}))
    methods = _use_methods(monkeypatch, path)

    @dataclass
    class Real:
        value: int

    assert Real(3).value == 3 and methods.compiled == 3


def test_nothing_is_written_without_bytecode_writing(tmp_path, monkeypatch):
    path = tmp_path / "records.methods"
    methods = _use_methods(monkeypatch, path, write=False)

    @dataclass
    class Unsaved:
        value: int

    methods.save()
    assert methods.compiled > 0 and not path.exists()


def test_an_unwritable_place_is_not_an_error(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    under_a_file = blocker / "sub" / "records.methods"
    methods = _use_methods(monkeypatch, under_a_file, write=True)

    @dataclass
    class Unsaved:
        value: int

    methods.save()
    assert list(tmp_path.iterdir()) == [blocker]


def test_a_full_file_keeps_only_what_is_used(tmp_path, monkeypatch):
    path = tmp_path / "records.methods"
    stale = {f"old text {i}": compile("pass", "<string>", "exec") for i in range(records.LIMIT)}
    path.write_bytes(MAGIC_NUMBER + marshal.dumps(stale))
    methods = _use_methods(monkeypatch, path, write=True)

    @dataclass
    class Used:
        value: int

    methods.save()
    kept = marshal.loads(path.read_bytes()[len(MAGIC_NUMBER) :])
    assert len(kept) == 3 and not any(text.startswith("old text") for text in kept)


def test_another_exec_in_dataclasses_is_left_alone(monkeypatch):
    seen: list[str] = []

    def foreign(source: Any, globals: Any = None, locals: Any = None) -> None:
        seen.append(source)
        exec(source, globals, locals)

    monkeypatch.setattr(dataclasses, "exec", foreign, raising=False)

    @dataclass
    class Plain:
        value: int

    assert Plain(1).value == 1 and len(seen) == 3 and dataclasses.exec is foreign


def test_every_dataclass_of_coterie_and_its_rule_sets_uses_it():
    # a class made by the standard decorator is compiled on every start (the template that
    # `coterie new-plugin` writes is a third party's code and stays standard)
    offenders = []
    for folder in ("core/coterie", "plugins"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "scaffold.py":
                continue
            text = path.read_text(encoding="utf-8")
            if re.search(r"^from dataclasses import [^\n]*\bdataclass\b", text, re.M) or re.search(
                r"@dataclasses\.dataclass\b", text
            ):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_a_second_chat_start_compiles_no_dataclass_method(tmp_path, cli_env):
    (tmp_path / "coterie.toml").write_text(
        '[plugins]\nenable = ["revised", "console"]\n', encoding="utf-8"
    )
    env = cached_env(cli_env, tmp_path)
    compiled = []
    for _ in range(2):
        out, report = chat_probe(tmp_path, env, ["!roll 3"])
        assert "3 dice, difficulty 6" in out
        compiled.append(report["compiled"])
    assert compiled[0] > 100 and compiled[1] == 0, compiled
    assert list((tmp_path / "pycache").rglob("records.*.methods"))

"""The atheris harness (``fuzz/fuzz_chat.py``, run by ``make fuzz``) stays runnable: its seed corpus
and every input it ever found a problem with are replayed through its own property checks here,
with or without atheris installed."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def harness() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("fuzz_chat", ROOT / "fuzz" / "fuzz_chat.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_chat"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("fuzz_chat", None)
    module.LOOP.close()


def test_the_seed_corpus_passes_every_property(harness, tmp_path) -> None:
    count = harness.write_seeds(tmp_path)
    assert count >= 5 * 2 * 10  # every rule set, every command's usage line, two shapes
    for seed in sorted(tmp_path.iterdir()):
        harness.check_input(seed.read_bytes())


def test_every_input_the_fuzzer_found_a_problem_with_now_passes(harness) -> None:
    found = sorted((ROOT / "fuzz" / "regressions").iterdir())
    assert found
    for path in found:
        harness.check_input(path.read_bytes())


def test_the_input_format(harness) -> None:
    variant, addressed, user, messages = harness.decode(b"\x03\x37!roll 5\n!roll 6\n!help")
    assert (variant, addressed, user) == ("laia", True, "user3")
    assert messages == ["!roll 5", "!roll 6", "!help"]  # (0x37 >> 4) & 3 = 3: four at most
    assert harness.decode(b"\x00\x00a\nb")[3] == ["a\nb"]  # one message, newline kept
    assert harness.decode(b"")[0] == "revised"


def test_the_checks_catch_an_unhandled_error(harness, monkeypatch) -> None:
    variant = type(harness.APPS["revised"].variants["revised"])

    def broken(self, parsed, settings):
        raise KeyError("a bug")

    monkeypatch.setattr(variant, "build", broken)
    with pytest.raises(harness.PropertyViolation, match="unhandled error"):
        harness.check_input(b"\x00\x00!roll 5 6")


def test_the_dictionary_lists_the_chat_words(harness, tmp_path) -> None:
    path = tmp_path / "chat.dict"
    assert harness.write_dictionary(path) > 20
    words = path.read_text(encoding="ascii").splitlines()
    assert '"roll"' in words and '"vs"' in words
    assert all(word.startswith('"') and word.endswith('"') for word in words)

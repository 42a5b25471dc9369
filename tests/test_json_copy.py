"""``json_copy`` (every value a store keeps, every logged roll): an equal value sharing no
container with the original, and the same refusals as ``check_json``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coterie.storage.state import json_copy

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


def _containers(value: Any) -> list[Any]:
    found = [value] if isinstance(value, (list, dict)) else []
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for item in items:
        found += _containers(item)
    return found


@given(_json)
def test_an_equal_copy_sharing_no_container(value: Any) -> None:
    copied = json_copy(value)
    assert copied == value
    originals = {id(c) for c in _containers(value)}
    assert not originals & {id(c) for c in _containers(copied)}


@pytest.mark.parametrize(
    "bad",
    [
        [1, float("nan")],
        {"a": [1, float("inf")]},
        {"a": object()},
        [1, {1, 2}],
    ],
)
def test_what_json_cannot_hold_is_refused(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        json_copy(bad)


def test_keys_json_would_write_as_text_are_kept_as_they_are() -> None:
    value = {"a": {2: [1]}}
    copied = json_copy(value)
    assert copied == value and copied["a"] is not value["a"] and copied["a"][2] is not value["a"][2]


def test_a_flat_record_detail_is_copied_not_shared() -> None:
    detail: dict[str, Any] = {"faces": [8, 2, 10], "pool": 3, "willpower": False, "degree": None}
    copied = json_copy(detail)
    detail["faces"].append(1)
    detail["pool"] = 4
    assert copied == {"faces": [8, 2, 10], "pool": 3, "willpower": False, "degree": None}

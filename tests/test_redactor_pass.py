"""The redactor scans a text once for every token shape (one expression) and remembers short
texts: it must redact exactly as well as one substitution per pattern did."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from coterie.ops.logs import MEMO_SIZE, REDACTED, TOKEN_PATTERNS, URL_PASSWORD, Redactor

SECRETS = ["hunter2-secret", "s3cr3t-value-long"]

FRAGMENTS = st.sampled_from(
    [
        "xoxb-",
        "xoxp-",
        "xapp-1-",
        "syt_",
        "syn_",
        "Bearer ",
        "bearer\t",
        "123456789:",
        "12345:",
        "0123456789",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef",
        "abcdefgh",
        "_-",
        "=",
        ":",
        " ",
        "postgresql://coterie:",
        "@db/",
        "[",
        "é",
        *SECRETS,
    ]
)
TEXTS = st.lists(FRAGMENTS, max_size=12).map("".join)


def one_pattern_at_a_time(secrets: list[str], text: str) -> str:
    """The redactor as it was: each secret, the URL password, then each pattern in turn."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    text = URL_PASSWORD.sub(rf"\g<1>{REDACTED}\g<3>", text)
    for pattern in TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


@settings(max_examples=500)
@given(TEXTS)
def test_no_token_shape_or_secret_survives(text: str) -> None:
    redacted = Redactor(SECRETS)(text)
    for pattern in TOKEN_PATTERNS:
        assert pattern.search(redacted) is None, (text, redacted)
    assert URL_PASSWORD.search(redacted) is None or REDACTED in redacted
    for secret in SECRETS:
        assert secret not in redacted


@settings(max_examples=300)
@given(st.lists(TEXTS, max_size=6).map(" ".join))
def test_a_remembered_text_is_redacted_as_the_first_time(text: str) -> None:
    redactor = Redactor(SECRETS)
    first = redactor(text)
    assert redactor(text) == first == Redactor(SECRETS)(text)


def test_separate_tokens_are_redacted_as_one_pattern_at_a_time_did() -> None:
    text = (
        "bot xoxb-1234-5678-abcdefgh app xapp-1-A0B1C2D3E4 tg 123456789:"
        + "A" * 35
        + " matrix syt_abcdefgh_ijkl auth Bearer abc.def.ghi= db postgresql://u:pw@host/x"
        + " and hunter2-secret"
    )
    assert Redactor(SECRETS)(text) == one_pattern_at_a_time(SECRETS, text)
    assert text.count(REDACTED) == 0 and Redactor(SECRETS)(text).count(REDACTED) == 7


def test_the_memo_is_bounded() -> None:
    redactor = Redactor()
    for n in range(MEMO_SIZE * 2 + 5):
        assert redactor(f"room {n}") == f"room {n}"
    assert len(redactor._memo) <= MEMO_SIZE
    assert redactor("x" * 500 + " xoxb-abcdefghij") == "x" * 500 + f" {REDACTED}"
    assert "x" * 500 + " xoxb-abcdefghij" not in redactor._memo  # long texts are not kept

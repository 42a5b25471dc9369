"""The shared chat grammar: splitting a message, tokens, and the declarative option parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coterie.errors import UsageError
from coterie.framework.grammar import (
    MAX_DIGITS,
    CommandLine,
    Grammar,
    Option,
    Pool,
    PoolTerm,
    Positional,
    parse,
    parse_pool,
    split_command,
    tokens,
)

VERSUS = Grammar(
    usage="vs POOL [DIFFICULTY]",
    positionals=(
        Positional("pool", "the other side's pool", kind="pool", required=True),
        Positional("difficulty", "difficulty", minimum=2, maximum=10),
    ),
    options=(Option("wp", "flag", "Willpower", key="willpower"),),
)

GRAMMAR = Grammar(
    usage="!test POOL [DIFFICULTY] [options]",
    positionals=(
        Positional("pool", "dice pool", kind="pool", required=True),
        Positional("difficulty", "difficulty 2-10", minimum=2, maximum=10),
    ),
    options=(
        Option("wp", "flag", "spend Willpower", key="willpower"),
        Option("spec", "flag", "specialty", aliases=("specialty",)),
        Option("diff", "int", "difficulty", key="difficulty", minimum=2, maximum=10, compact=True),
        Option("hunger", "int", "Hunger dice", aliases=("h",), minimum=0, maximum=5, compact=True),
        Option("retry", "int", "failed attempts", minimum=0),
        Option("cap", "int", "a cap", maximum=50),
        Option("for", "word", "whose roll", metavar="NAME"),
    ),
    versus=VERSUS,
    named_traits=("willpower", "humanity"),
)


def p(text: str, grammar: Grammar = GRAMMAR, **kwargs: int):
    return parse(tokens(text), grammar, **kwargs)


def error_of(text: str, grammar: Grammar = GRAMMAR, **kwargs: int) -> UsageError:
    with pytest.raises(UsageError) as caught:
        p(text, grammar, **kwargs)
    return caught.value


# --- split_command ------------------------------------------------------------------------------


def test_split_command_parts():
    assert split_command("!roll 7 6 # aim for the eyes", ["!"]) == CommandLine(
        prefix="!", command="roll", args="7 6", comment="aim for the eyes"
    )


def test_split_command_lowercases_word_and_strips_space():
    line = split_command("   !ROLL   5  wp  ", ["!"])
    assert line is not None
    assert (line.command, line.args, line.comment) == ("roll", "5  wp", None)


def test_split_command_not_a_command():
    assert split_command("roll 7", ["!"]) is None
    assert split_command("!", ["!"]) is None
    assert split_command("!   # only a comment", ["!"]) is None
    assert split_command("", ["!"]) is None


def test_split_command_empty_comment_is_none_and_only_first_hash_splits():
    assert split_command("!roll 5 #   ", ["!"]).comment is None  # type: ignore[union-attr]
    line = split_command("!roll 5 # a # b", ["!"])
    assert line is not None
    assert (line.args, line.comment) == ("5", "a # b")


@pytest.mark.parametrize("text", ["!roll\t5 6", "!roll\n5 6", "!Roll \t 5 6\n"])
def test_split_command_any_whitespace_ends_the_command_word(text):
    line = split_command(text, ["!"])
    assert line is not None
    assert (line.command, tokens(line.args)) == ("roll", ["5", "6"])


def test_split_command_prefers_longest_prefix():
    line = split_command("!!roll 5", ["!", "!!"])
    assert line is not None
    assert (line.prefix, line.command) == ("!!", "roll")
    line = split_command("?roll 5", ["!", "?"])
    assert line is not None and line.prefix == "?"


def test_split_command_ignores_empty_prefix():
    assert split_command("roll 5", [""]) is None


# --- tokens -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3 + 4", ["3+4"]),
        ("3+4 6", ["3+4", "6"]),
        ("3 + 4 - 1  6 wp", ["3+4-1", "6", "wp"]),
        ("3 +4", ["3+4"]),
        ("a + b", ["a", "+", "b"]),
        ("wp + 3", ["wp", "+", "3"]),
        ("  ", []),
        ("", []),
    ],
)
def test_tokens(text, expected):
    assert tokens(text) == expected


# --- parse: positionals -------------------------------------------------------------------------


def test_positionals_in_order():
    parsed = p("7 8")
    assert parsed.pool() == Pool.of(7)
    assert parsed.int("difficulty") == 8


def test_pool_sum_and_penalty():
    parsed = p("3 + 4 - 2 6")
    pool = parsed.pool()
    assert pool is not None
    assert pool.total == 5
    assert pool.terms == (PoolTerm(3), PoolTerm(4), PoolTerm(2, -1))
    assert str(pool) == "3+4-2"


def test_optional_positional_may_be_left_out():
    parsed = p("5")
    assert parsed.int("difficulty") is None
    assert parsed.int("difficulty", 6) == 6


def test_required_positional_missing():
    error = error_of("wp")
    assert "pool is missing" in error.message
    assert error.usage == GRAMMAR.usage


def test_extra_positional_says_what_was_read():
    error = error_of("5 6 7")
    assert "`7`" in error.message
    assert "pool 5" in error.message and "difficulty 6" in error.message


def test_named_trait_labels_the_pool():
    pool = p("willpower 7 8").pool()
    assert pool is not None
    assert pool.terms == (PoolTerm(7, 1, "willpower"),)
    assert str(pool) == "willpower 7"


def test_named_trait_needs_its_rating():
    assert "needs its rating" in error_of("humanity").message
    assert "needs its rating" in error_of("humanity wp").message


def test_pool_token_that_is_not_a_sum():
    with pytest.raises(UsageError, match="sum like"):
        parse_pool("3++4")


# --- parse: options -----------------------------------------------------------------------------


def test_flag_alias_and_case():
    parsed = p("5 WP specialty")
    assert parsed.flag("willpower")
    assert parsed.flag("spec")
    assert not parsed.flag("for")


def test_int_option_separate_equals_and_compact():
    assert p("5 diff 7").int("difficulty") == 7
    assert p("5 diff=7").int("difficulty") == 7
    assert p("5 diff7").int("difficulty") == 7
    assert p("5 h2").int("hunger") == 2
    assert p("5 hunger=3").int("hunger") == 3


def test_compact_form_only_for_compact_options():
    error = error_of("5 retry2")
    assert "unknown option `retry2`" in error.message


def test_keyword_fills_positional_slot():
    parsed = p("diff 7 5")
    assert parsed.pool() == Pool.of(5)
    assert parsed.int("difficulty") == 7


def test_keyword_and_positional_for_the_same_value_is_given_twice():
    assert "`diff` is given twice" in error_of("5 6 diff 7").message


def test_word_option():
    assert p("5 for Bob").word("for") == "bob"
    assert p("5 for=lynn_2").word("for") == "lynn_2"


@pytest.mark.parametrize("text", ["5 for 12", "5 for " + "a" * 41, "5 for=x!y"])
def test_word_option_refuses_odd_names(text):
    assert "short name" in error_of(text).message


@pytest.mark.parametrize(
    "text", ["5 wp wp", "5 spec specialty", "5 h1 hunger 2", "5 diff 7 diff=8"]
)
def test_given_twice(text):
    error = error_of(text)
    assert "given twice" in error.message
    assert error.usage == GRAMMAR.usage


def test_flag_takes_no_value():
    assert "`wp` takes no value" in error_of("5 wp=1").message


def test_option_needs_a_value():
    error = error_of("5 diff")
    assert "`diff` needs a value" in error.message
    assert "`diff N`" in error.message


@pytest.mark.parametrize(
    ("word", "suggestion"), [("wpp", "wp"), ("hungr", "hunger"), ("dif", "diff")]
)
def test_unknown_option_suggests_closest(word, suggestion):
    error = error_of(f"5 {word}")
    assert f"unknown option `{word}`" in error.message
    assert f"Did you mean `{suggestion}`?" in error.message
    assert error.usage == GRAMMAR.usage


def test_unknown_option_without_close_word_has_no_suggestion():
    error = error_of("5 zzzzzz")
    assert "unknown option" in error.message
    assert "Did you mean" not in error.message


def test_unknown_option_is_shortened_and_cleaned():
    error = error_of("5 " + "q" * 200 + "\x1b[31m")
    assert "q" * 30 not in error.message
    assert "\x1b" not in error.message


def test_too_many_options():
    assert p("5 wp spec", max_options=2).flag("spec")
    error = error_of("5 wp spec h1", max_options=2)
    assert "too many options" in error.message
    assert "at most 2" in error.message


# --- parse: numbers and ranges ------------------------------------------------------------------


def test_six_digits_accepted_seven_refused():
    assert p("1" * MAX_DIGITS).pool() == Pool.of(int("1" * MAX_DIGITS))
    error = error_of("1" * (MAX_DIGITS + 1))
    assert "far too large" in error.message


def test_huge_number_is_refused_before_conversion_and_shortened():
    error = error_of("5 diff " + "9" * 5000)
    assert "far too large" in error.message
    assert len(error.message) < 80


def test_huge_number_in_a_sum():
    assert "far too large" in error_of("3+" + "9" * 50).message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5 11", "difficulty must be between 2 and 10, not 11"),
        ("5 1", "difficulty must be between 2 and 10, not 1"),
        ("5 diff 0", "`diff` must be between 2 and 10, not 0"),
        ("5 h6", "`hunger` must be between 0 and 5, not 6"),
        ("5 cap 51", "`cap` must be at most 50, not 51"),
    ],
)
def test_range_errors(text, expected):
    error = error_of(text)
    assert error.message == expected
    assert error.usage == GRAMMAR.usage


def test_range_minimum_only():
    grammar = Grammar(usage="!x [n N]", options=(Option("n", "int", "n", minimum=3),))
    assert parse(["n", "3"], grammar).int("n") == 3
    with pytest.raises(UsageError, match=r"`n` must be at least 3, not 2"):
        parse(["n", "2"], grammar)


def test_not_a_number():
    assert "must be a whole number, not `x7`" in error_of("5 diff x7").message
    assert "must be a whole number, not ``" in error_of("5 diff=").message


# --- parse: versus ------------------------------------------------------------------------------


def test_versus_parses_the_other_side():
    parsed = p("6 7 wp vs 4 5 wp")
    assert parsed.pool() == Pool.of(6)
    assert parsed.flag("willpower")
    assert parsed.versus is not None
    assert parsed.versus.pool() == Pool.of(4)
    assert parsed.versus.int("difficulty") == 5
    assert parsed.versus.flag("willpower")


def test_versus_errors_carry_the_whole_commands_usage():
    error = error_of("6 vs")
    assert "`vs` needs the other side" in error.message
    assert error.usage == GRAMMAR.usage
    error = error_of("6 vs 4 spec")  # spec exists on the main side only
    assert "unknown option `spec`" in error.message
    assert error.usage == GRAMMAR.usage != VERSUS.usage


def test_vs_is_an_unknown_option_without_a_versus_grammar():
    assert "unknown option `vs`" in error_of("6 vs 4", VERSUS).message


# --- parse never fails in any other way ---------------------------------------------------------

_VOCABULARY = ["wp", "spec", "diff", "h", "hunger", "for", "vs", "willpower", "=", "+", "-", "7"]
_words = st.one_of(
    st.text(max_size=12),
    st.sampled_from(_VOCABULARY),
    st.from_regex(r"[a-z]{0,6}=?[0-9]{0,9}", fullmatch=True),
    st.from_regex(r"[0-9]{1,8}([+-][0-9]{1,8}){0,3}", fullmatch=True),
)


def _check(words: list[str], grammar: Grammar) -> None:
    try:
        parsed = parse(words, grammar, max_options=5)
    except UsageError as error:
        assert error.usage in (GRAMMAR.usage, VERSUS.usage)
        assert error.message
        assert len(error.message) < 200
        assert all(ch.isprintable() for ch in error.message), error.message
    else:
        pool = parsed.pool()
        assert pool is None or all(0 <= t.dice < 10**MAX_DIGITS for t in pool.terms)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_arbitrary_text_returns_or_raises_usage_error(text):
    words = tokens(text)
    _check(words, GRAMMAR)
    _check(words, VERSUS)


@settings(max_examples=300, deadline=None)
@given(st.lists(_words, max_size=12))
def test_parse_arbitrary_words_returns_or_raises_usage_error(words):
    _check(words, GRAMMAR)


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(["!", "?", "!!", "."]))
def test_split_command_never_fails(text, prefix):
    line = split_command(text, [prefix])
    if line is not None:
        assert line.prefix == prefix
        assert line.command and not any(ch.isspace() for ch in line.command)
        assert line.command == line.command.lower()

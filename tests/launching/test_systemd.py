"""launching.systemd: words and values quoted the way systemd reads them (systemd.syntax(7))."""

from __future__ import annotations

import pytest

from envguard.launching.systemd import _assignment, _secret_free_command, one_line, quote_word


@pytest.mark.parametrize(
    ("word", "quoted"),
    [
        ("--tp-size", "--tp-size"),
        ("/models/kimi", "/models/kimi"),
        ("a b", '"a b"'),
        ("50%", '"50%%"'),
        ("$HOME", '"$$HOME"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("two\nlines", '"two\\nlines"'),
        ("", '""'),
    ],
)
def test_exec_start_words(word: str, quoted: str) -> None:
    assert quote_word(word) == quoted


def test_environment_values_keep_dollars_and_double_percents() -> None:
    assert _assignment("X", "a $b 5%") == '"X=a $b 5%%"'


def test_one_line_settings() -> None:
    assert one_line("two\nlines  and %i") == "two lines and %%i"


def test_secret_arguments_become_variables() -> None:
    words, names = _secret_free_command(["srv", "--api-key", "k", "--admin-api=x", "--tp", "8"])
    assert words == ["srv", "--api-key", "${ENVGUARD_SECRET_API_KEY}",
                     "--admin-api=${ENVGUARD_SECRET_ADMIN_API}", "--tp", "8"]  # fmt: skip
    assert names == ["ENVGUARD_SECRET_API_KEY", "ENVGUARD_SECRET_ADMIN_API"]

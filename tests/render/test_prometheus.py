"""render.prometheus: label values escaped as the exposition format requires."""

from __future__ import annotations

import pytest

from envguard.render.prometheus import labels, metric


def test_label_values_are_escaped_and_parse_back() -> None:
    parser = pytest.importorskip("prometheus_client.parser")
    nasty = 'a "quoted" \\ back\nslash'
    text = metric("envguard_up", "gauge", "test", [(labels([("target", f"--match {nasty}")]), 1)])
    assert 'target="--match a \\"quoted\\" \\\\ back\\nslash"' in text
    [family] = parser.text_string_to_metric_families(text)
    assert family.samples[0].labels["target"] == f"--match {nasty}"

"""RE2 patterns the regex kernels cannot express are refused with an error naming the construct,
never run with Python's different meaning. (What RE2 itself accepts and rejects, and what
matches, is checked against TensorFlow in tests/data/ops/cases_strings2.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from savedmodel.runtime.errors import KernelError
from savedmodel.runtime.kernels.strings import regex_full_match, static_regex_replace


def _strings(*items: str) -> np.ndarray:
    array = np.empty(len(items), dtype=object)
    array[:] = [i.encode() for i in items]
    return array


@pytest.mark.parametrize("pattern, named", [
    (r"\p{Greek}", r"\p{Greek}"), (r"[\p{Han}]", r"\p{Han}"), (r"a\C", r"\C")])
def test_constructs_re2_has_and_python_lacks_are_refused_by_name(pattern, named):
    with pytest.raises(KernelError, match="not supported by this engine") as caught:
        static_regex_replace(_strings("a"), pattern=pattern, rewrite="")
    assert named in str(caught.value) and "StaticRegexReplace" in str(caught.value)


def test_unicode_general_categories_are_translated():
    pattern = np.array(b"\\pL|\\p{Nd}", dtype=object)
    matched = regex_full_match(_strings("é", "Ω", "3", "٣", "_"), pattern)
    assert matched[0].tolist() == [True, True, True, True, False]


def test_patterns_that_are_not_utf8_are_refused():
    """As RE2 refuses them (TensorFlow's error message then holds the bad bytes)."""
    with pytest.raises(KernelError, match="invalid UTF-8"):
        regex_full_match(_strings("a"), np.array(b"a\xff", dtype=object))

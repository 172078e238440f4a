"""The shape of ``infra/``: short functions and modules, so each construct can be
read on its own -- a constructor that grows past a screen is a sign it owns too much."""

from __future__ import annotations

from infra.config import ROOT
from tests.support.layout import long_functions, long_modules

INFRA = ROOT / "infra"


def test_no_function_or_method_in_infra_is_longer_than_60_lines():
    assert long_functions(ROOT, INFRA) == []


def test_no_module_in_infra_is_longer_than_400_lines():
    assert long_modules(ROOT, INFRA) == []

"""The benchmarks time what the library computes: their variants agree before they are timed."""

from __future__ import annotations

import pytest

from benchmarks.repulsive_update import SETTINGS, TOLERANCE, VARIANTS, make_problem, relative_difference


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("setting", SETTINGS)
def test_repulsive_update_batched_and_loop_directions_agree(setting: str, variant: str) -> None:
    """kde-WGD (eq. 15) and kde-fWGD (eq. 20), batched and looped, in every setting of benchmarks/repulsive_update.py
    (the 1D toy with its Gaussian likelihood included)."""
    assert relative_difference(variant, make_problem(SETTINGS[setting])) < TOLERANCE

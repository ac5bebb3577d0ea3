"""Thesis Table 6.3 (Haußmann 2021, ch. 6): the counted cost of one BNSDE training iteration scales as the thesis'
big-O says (linear in T and M; local reparameterisation doubles F; the PAC path KL, the weight KL and the prior
drift add the terms it names). Measured on short sequences: every count is affine in T, so short ones suffice."""

from __future__ import annotations

import pandas as pd
import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from bnnrepro.artifacts.operation_counter import OperationCounter
from bnnrepro.artifacts.registry import implementation
from bnnrepro.artifacts.thesis_bnsde_costs import (
    AT_ZERO_COLUMN,
    HYBRIDS,
    PER_T_COLUMN,
    PER_T_MATMUL_COLUMN,
    RATIO_COLUMN,
    REFERENCE,
    ROWS,
    SWEEP,
    THESIS_COLUMN,
    THESIS_COSTS,
    beyond_reference,
    build_model,
    cost_cells,
    drift_weights,
    label,
    measured_counts,
    one_iteration,
    row_config,
    sequences,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")

T0, T1, T2 = 2, 3, 4  # sequence lengths: one to three Euler-Maruyama steps
SHORT_SWEEP = ((T0, 1, 3), (T1, 1, 3), (T2, 1, 3), (T1, 2, 3), (T1, 4, 3), (T0, 1, 6), (T1, 1, 6))
SHORT_REFERENCE = (T1, 1, 3)


@pytest.fixture(scope="module")
def counts() -> pd.DataFrame:
    return measured_counts(sweep=SHORT_SWEEP)


def at(counts: pd.DataFrame, row: str, length: int, samples: int = 1, states: int = 3, column: str = "matmul") -> int:
    return counts.set_index(["row", "T", "M", "D"]).loc[(row, length, samples, states), column]


@pytest.mark.parametrize("row", list(ROWS))
def test_the_matmul_flops_are_those_flop_counter_mode_counts(row: str) -> None:
    """The counter applies torch.utils.flop_counter's formulas itself: one iteration of each row, counted by it and
    by `FlopCounterMode` (the reference) on the same model and inputs, gives the same FLOPs."""
    cfg = row_config(row)
    counts = []
    for counter in (OperationCounter(), FlopCounterMode(display=False)):
        torch.manual_seed(0)
        method = build_model(cfg, T1)
        x, y = sequences(T1, 3)
        with counter:
            one_iteration(method, x, y, cfg.dataset.n_train)
        counts.append(counter.matmul_flops if isinstance(counter, OperationCounter) else counter.get_total_flops())
    assert counts[0] == counts[1] > 0


def test_matmul_flops_are_proportional_to_m_and_affine_in_t(counts: pd.DataFrame) -> None:
    for row in ROWS:
        for states in (3,) if row in HYBRIDS else (3, 6):
            assert at(counts, row, T1, states=states) - at(counts, row, T0, states=states) > 0
        assert at(counts, row, T2) - at(counts, row, T1) == at(counts, row, T1) - at(counts, row, T0)
        for samples in (2, 4):
            assert at(counts, row, T1, samples) == samples * at(counts, row, T1)


def test_elementwise_ops_are_affine_in_t_and_in_m(counts: pd.DataFrame) -> None:
    for row in ROWS:
        ops = {(t, m): at(counts, row, t, m, column="elementwise") for t, m, d in SHORT_SWEEP if d == 3}
        assert ops[T2, 1] - ops[T1, 1] == ops[T1, 1] - ops[T0, 1] > 0
        assert ops[T1, 4] - ops[T1, 2] == 2 * (ops[T1, 2] - ops[T1, 1]) > 0


def test_local_reparameterisation_doubles_sglds_forward_cost(counts: pd.DataFrame) -> None:
    """2MTF against D-BNN (SGLD)'s MTF: two products per layer (mean and variance), and their gradients."""
    cells = cost_cells(counts, SHORT_REFERENCE).set_index(["row", "column"])["ours"]
    for row in ROWS:
        doubled = row != "D-BNN (SGLD)"
        assert cells[row, f"{RATIO_COLUMN}, {label(*SHORT_REFERENCE)}"] == (2.0 if doubled else 1.0)
        assert cells[row, f"{PER_T_MATMUL_COLUMN}, M=1, D=3"] == (6.0 if doubled else 3.0)  # forward + 2x backward
        assert at(counts, row, T2) == at(counts, "E-Bayes", T2) * (1 if doubled else 0.5)


def test_the_pac_objective_adds_a_weight_kl_and_a_path_kl_linear_in_m_t_and_d(counts: pd.DataFrame) -> None:
    """E-PAC-Bayes - E-Bayes = C + s M (T - 1) exactly: C the weight KL (independent of T and M, as Variational
    Bayes' whole extra), s M (T - 1) the path KL of Lemma 1, whose cost per step grows linearly in D (G is diagonal:
    no D³)."""
    extras = beyond_reference(counts)
    per_step = extras.loc[("E-PAC-Bayes", 3), "per_t"]
    assert per_step > 0

    def extra(length: int, samples: int) -> int:
        pac, e_bayes = (at(counts, row, length, samples, column="elementwise") for row in ("E-PAC-Bayes", "E-Bayes"))
        return pac - e_bayes

    constant = extra(T0, 1) - per_step * (T0 - 1)
    for length, samples, states in SHORT_SWEEP:
        if states == 3:
            assert extra(length, samples) == constant + per_step * samples * (length - 1)
    weights = drift_weights(row_config("E-PAC-Bayes"))
    assert 2 * weights < constant < 20 * weights
    assert extras.loc[("Variational Bayes", 3), "per_t"] == 0  # the weight KL alone: independent of T
    assert extras.loc[("Variational Bayes", 3), "at_zero"] == pytest.approx(constant, rel=1e-3)
    wide = extras.loc[("E-PAC-Bayes", 6), "per_t"]
    assert per_step < wide < 2 * per_step  # linear in D with an offset; a D³ term would multiply it by 8


def test_the_prior_drift_adds_a_cost_proportional_to_m_and_affine_in_t(counts: pd.DataFrame) -> None:
    """MTP: the hybrids' extra over their black box is the prior drift's, the same for either objective."""
    for hybrid, black_box in (("E-Bayes-Hybrid", "E-Bayes"), ("E-PAC-Bayes-Hybrid", "E-PAC-Bayes")):

        def extra(length: int, samples: int, hybrid=hybrid, black_box=black_box) -> int:
            return at(counts, hybrid, length, samples, column="elementwise") - at(
                counts, black_box, length, samples, column="elementwise"
            )

        assert extra(T2, 1) - extra(T1, 1) == extra(T1, 1) - extra(T0, 1) > 0
        assert extra(T1, 2) == 2 * extra(T1, 1) and extra(T1, 4) == 4 * extra(T1, 1)
        assert extra(T2, 1) == at(counts, "E-Bayes-Hybrid", T2, column="elementwise") - at(
            counts, "E-Bayes", T2, column="elementwise"
        )
        assert at(counts, hybrid, T1) == at(counts, black_box, T1)  # elementwise only: no matmul FLOPs


def expected_columns(row: str, sweep, reference) -> list[str]:
    points = [p for p in sweep if p[2] == 3 or row not in HYBRIDS]
    columns = [THESIS_COLUMN]
    columns += [f"{kind}, {label(*p)}" for p in points for kind in ("matmul FLOPs", "elementwise ops")]
    columns.append(f"{RATIO_COLUMN}, {label(*reference)}")
    for states in dict.fromkeys(p[2] for p in points):
        columns += [f"{c}, M=1, D={states}" for c in (PER_T_MATMUL_COLUMN, PER_T_COLUMN, AT_ZERO_COLUMN)]
    return columns


def test_table_6_3_has_the_thesis_rows_and_one_column_per_count_and_point(counts: pd.DataFrame) -> None:
    measured = cost_cells(counts, SHORT_REFERENCE)
    assert list(measured["row"].unique()) == list(THESIS_COSTS)
    for row, group in measured.groupby("row"):
        assert list(group["column"]) == expected_columns(row, SHORT_SWEEP, SHORT_REFERENCE)
    # the drawn table's layout, on made-up counts (measuring the full sweep takes most of a minute)
    made_up = pd.DataFrame(
        [{"row": row, "T": t, "M": m, "D": d, "matmul": t * m * d, "elementwise": t * m + d, "F": 1}
         for row in ROWS for t, m, d in SWEEP if d == 3 or row not in HYBRIDS]
    )  # fmt: skip
    table = cost_cells(made_up).set_index(["row", "column"])["ours"]
    assert list(table.index.get_level_values("row").unique()) == list(THESIS_COSTS)
    for row in ROWS:
        assert list(table[row].index) == expected_columns(row, SWEEP, REFERENCE)
    assert table["E-PAC-Bayes", THESIS_COLUMN] == "O(2MTF + MTDL + W + TMD³)"
    artifact = implementation("thesis/table6.3")
    assert artifact.uses == "nothing" and "FlopCounterMode" in artifact.note("smoke")


def test_the_rows_are_the_studys_lorenz_variants_with_their_objectives() -> None:
    objectives = {row: row_config(row).method.objective for row in ROWS}
    assert objectives == {
        "D-BNN (SGLD)": "sgld", "Variational Bayes": "elbo", "E-Bayes": "e_bayes", "E-PAC-Bayes": "e_pac_bayes",
        "E-Bayes-Hybrid": "e_bayes", "E-PAC-Bayes-Hybrid": "e_pac_bayes",
    }  # fmt: skip
    assert list(row_config("E-PAC-Bayes-Hybrid").method.knowledge.gamma) == [0, 0, 1]
    assert row_config("E-Bayes").dataset.name == "lorenz"
    wide = row_config("E-PAC-Bayes", states=6).dataset.dynamics
    assert wide.system is None and list(wide.diffusion) == [1.0] * 6
    with pytest.raises(ValueError, match="3-D system"):
        row_config("E-Bayes-Hybrid", states=6)

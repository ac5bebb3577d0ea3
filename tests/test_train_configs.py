"""The config/train files a training job composes (bnnrepro.train_configs), against Hydra's own composition."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig

from bnnrepro.paths import train_config_dir
from bnnrepro.pipeline.studies import available_studies, load_study
from bnnrepro.train_configs import composed_files


def hydra_choices(overrides: list[str]) -> dict[str, str | None]:
    """The option Hydra picks for each group when it composes config/train with `overrides`."""
    with initialize_config_dir(config_dir=str(train_config_dir()), version_base="1.3", job_name="train"):
        cfg = compose(config_name="config", overrides=[*overrides, "run_dir=x"], return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        return dict(HydraConfig.get().runtime.choices)


@pytest.mark.parametrize("study", available_studies())
def test_each_runs_files_are_the_options_hydra_composes(study: str) -> None:
    """For one run per method variant of every study: the files name Hydra's choice of method, dataset, scale and
    protocol, and each method file's defaults chain ends in a file that sets the method's name."""
    seen = set()
    for run in load_study(study).runs("smoke"):
        if run.method in seen:
            continue
        seen.add(run.method)
        overrides = [o for o in load_study(study).overrides(run) if not o.startswith("dataset.path")] + ["scale=smoke"]
        files = composed_files(overrides)
        choices = hydra_choices(overrides)
        for group in ("method", "dataset", "scale"):
            assert f"config/train/{group}/{choices[group]}.yaml" in files, (group, files)
        protocol = choices.get("protocol")
        assert (f"config/train/protocol/{protocol}.yaml" in files) == (protocol is not None), files
        assert files[0] == "config/train/config.yaml"
        nested = {g.partition("@")[0]: o for g, o in choices.items() if "@" in g and not g.startswith("hydra/")}
        for group, option in nested.items():  # options a method file nests (method.generator's depth_generator)
            assert f"config/train/{group}/{option}.yaml" in files, (group, files)


def test_an_unknown_option_names_the_group_and_the_known_options() -> None:
    with pytest.raises(FileNotFoundError, match=r"method=udm: there is no config/train/method/udm.yaml; known: .*udn"):
        composed_files(["method=udm"])

"""Settings: values that cannot work and misspelt ``PERCEPTION_*`` names are ConfigErrors."""

from __future__ import annotations

from typing import Any

import pytest

from perception.config import (
    DeviceConfig,
    EngineConfig,
    FusionConfig,
    PixelConfig,
    TreeConfig,
)
from perception.errors import ConfigError


@pytest.mark.parametrize("value", ["0", "-1"])
def test_label_pieces_below_one_are_refused(value: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"max_label_pieces must be >= 1 \(got {value}\).*"
        rf"PERCEPTION_TREE_MAX_LABEL_PIECES='{value}'"
    ):
        TreeConfig.from_env({"PERCEPTION_TREE_MAX_LABEL_PIECES": value})
    assert TreeConfig.from_env({"PERCEPTION_TREE_MAX_LABEL_PIECES": "1"}).max_label_pieces == 1


def test_tree_limits_say_which_bound_was_crossed() -> None:
    with pytest.raises(ConfigError, match=r"max_depth must be <= 250 \(got 1000\)"):
        TreeConfig.from_env({"PERCEPTION_TREE_MAX_DEPTH": "1000"})
    with pytest.raises(ConfigError, match=r"max_depth must be >= 8 \(got 3\)"):
        TreeConfig(max_depth=3)
    with pytest.raises(ConfigError, match=r"max_input_bytes must be >= 1024 \(got 10\)"):
        TreeConfig(max_input_bytes=10)
    with pytest.raises(ConfigError, match=r"max_nodes must be >= 1 \(got 0\)"):
        TreeConfig(max_nodes=0)
    assert TreeConfig.from_env({"PERCEPTION_TREE_MAX_DEPTH": "250"}).max_depth == 250


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (TreeConfig, "PERCEPTION_TREE_BOGUS"),
        (TreeConfig, "PERCEPTION_TREE_MAX_LABEL_PIECE"),
        (FusionConfig, "PERCEPTION_FUSION_PAIR_WINDOW"),
        (PixelConfig, "PERCEPTION_PIXEL_REC_WORKER"),
        (DeviceConfig, "PERCEPTION_DEVICE_DUMP_TIMEOUT"),
        (EngineConfig, "PERCEPTION_ENGINE_FRAME_INTERVAL"),
    ],
)
def test_a_misspelt_setting_is_named_with_the_known_ones(cls: Any, name: str) -> None:
    with pytest.raises(ConfigError, match=f"unknown setting {name}: {cls.__name__} reads") as e:
        cls.from_env({name: "1"})
    prefix = name.rsplit("_", 1)[0] if cls is TreeConfig else name
    assert prefix.split("_")[1] in str(e.value)
    known = {f"PERCEPTION_{name.split('_')[1]}_{f.upper()}" for f in cls.__dataclass_fields__}
    assert all(k in str(e.value) for k in known)


def test_other_perception_variables_are_not_ours_to_refuse() -> None:
    env = {
        "PERCEPTION_FASTPATH": "python",
        "PERCEPTION_REQUIRE_EXT": "1",
        "PERCEPTION_NO_EXT": "1",
        "PERCEPTION_CYTHON_DEBUG": "1",
        "PERCEPTION_CORPUS": "/somewhere",
        "PERCEPTION_TREE_LIST_KEEP": "3",
    }
    assert TreeConfig.from_env(env).list_keep == 3
    for cls in (FusionConfig, PixelConfig, DeviceConfig, EngineConfig):
        assert cls.from_env(env) == cls()


def test_booleans_are_words_not_anything() -> None:
    assert PixelConfig.from_env({"PERCEPTION_PIXEL_USE_CLS": "yes"}).use_cls
    assert not PixelConfig.from_env({"PERCEPTION_PIXEL_USE_CLS": "off"}).use_cls
    with pytest.raises(ConfigError, match="PERCEPTION_PIXEL_USE_CLS='maybe': expected bool"):
        PixelConfig.from_env({"PERCEPTION_PIXEL_USE_CLS": "maybe"})

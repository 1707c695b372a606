from pathlib import Path

import pytest

from rlvr.config import ConfigError, StrictModel, dump_config, load_config


class Inner(StrictModel):
    temperature: float = 1.0


class Cfg(StrictModel):
    lr: float = 1e-3
    steps: int = 10
    inner: Inner = Inner()


def test_file_then_flags(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("lr: 0.5\nsteps: 3\ninner:\n  temperature: 0.7\n")
    cfg = load_config(Cfg, f, {"steps": 7, "inner.temperature": None})
    assert cfg == Cfg(lr=0.5, steps=7, inner=Inner(temperature=0.7))


def test_unknown_key_names_file_line_field(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("lr: 0.5\n\nstepz: 3\n")
    with pytest.raises(ConfigError) as e:
        load_config(Cfg, f)
    assert str(e.value) == f"{f}:3: field 'stepz': unknown field"


def test_bad_nested_value_names_line(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("inner:\n  temperature: hot\n")
    with pytest.raises(ConfigError, match=r"c.yaml:2: field 'inner.temperature'"):
        load_config(Cfg, f)


def test_bad_flag_is_blamed_on_flags(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("lr: 0.5\n")
    with pytest.raises(ConfigError, match=r"^<flags>: field 'steps'"):
        load_config(Cfg, f, {"steps": "x"})


def test_invalid_yaml_and_non_mapping(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("lr: [1,\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        load_config(Cfg, f)
    f.write_text("- 1\n")
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_config(Cfg, f)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(Cfg, tmp_path / "missing.yaml")


def test_dump_round_trip(tmp_path: Path) -> None:
    cfg = Cfg(lr=0.25, inner=Inner(temperature=0.5))
    dump_config(cfg, tmp_path / "config.yaml")
    assert load_config(Cfg, tmp_path / "config.yaml") == cfg


def test_train_overrides_are_typed_as_train_config_and_written_as_given(tmp_path: Path) -> None:
    """`train:` under search and study: TrainConfig's fields, each optional, constrained as there."""
    from rlvr.search.config import SearchConfig

    cfg = load_config(SearchConfig, None, {"train": {"lr": 1e-4, "sampling": {"max_new_tokens": 16}}})
    assert cfg.train.values() == {"lr": 1e-4, "sampling": {"max_new_tokens": 16}}
    dump_config(cfg, tmp_path / "search.yaml")
    again = load_config(SearchConfig, tmp_path / "search.yaml")
    assert again == cfg and set(again.train.model_fields_set) == {"lr", "sampling"}  # not every field, as None
    for bad, message in (
        ({"lrr": 1}, "field 'train.lrr': unknown field"),
        ({"lr": -1}, "field 'train.lr': Input should be greater than 0"),
        ({"group_size": 1}, "field 'train.group_size': Input should be greater than or equal to 2"),
        ({"max_new_tokens": 32}, "'max_new_tokens' is now 'sampling.max_new_tokens'"),
        ({"sampling": {"max_new_tokens": 8}, "objective_overrides": {"overlong_buffer": 9}}, "overlong_buffer"),
    ):
        with pytest.raises(ConfigError, match=message):
            load_config(SearchConfig, None, {"train": bad})

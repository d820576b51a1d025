"""Every bad value of a config is one ``ConfigError`` line naming the key and what is allowed: YAML
alias bombs, recursive aliases and deep nesting refused before anything is built, integers too long
for Python or too large for 64 bits, lists and mappings where a name is expected, values of the
``trainer:`` pass-through."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from hardneg.config import ConfigError
from hardneg.pipeline.config import MAX_ALIAS_VALUES, MAX_YAML_DEPTH, dump_yaml, load_config


def _bomb(levels: int, indent: str = "    ") -> str:
    """A "billion laughs" document: ``levels`` lists of 10 aliases of the previous one (10**levels)."""
    lines = [f"{indent}l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"{indent}l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_under_trainer_is_refused_fast_naming_the_file(tmp_path: Path) -> None:
    config = tmp_path / "lol.yaml"
    config.write_text("trainer:\n  profiler:\n" + _bomb(9))  # 10**9 strings once expanded
    # list l_i holds 10 aliases of l_(i-1), whose expansion has 11, 111, 1111, ... values
    added = 10 * sum(int("1" * (i + 2)) for i in range(8))
    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert str(caught.value).startswith(
        f"config file '{config}': its YAML aliases expand it by {added} values, more than the "
        f"{MAX_ALIAS_VALUES} allowed (an alias bomb?)"
    )
    assert seconds < 1.0 and peak < 20 << 20, (seconds, peak)


def test_an_alias_bomb_in_an_override_is_refused_naming_the_key() -> None:
    many = "[&a [" + ", ".join(["x"] * 100) + "], " + ", ".join(["*a"] * 200) + "]"  # adds 200 x (1 + 100)
    with pytest.raises(ConfigError) as caught:
        load_config("digits", [f"trainer.profiler={many}"])
    assert str(caught.value).startswith(
        f"invalid value for 'trainer.profiler': its YAML aliases expand it by {200 * 101} values, "
        f"more than the {MAX_ALIAS_VALUES} allowed"
    )
    few = "[&a [" + ", ".join(["x"] * 10) + "], " + ", ".join(["*a"] * 20) + "]"  # adds 20 x 11: accepted
    with pytest.raises(ConfigError, match=r"^invalid value for 'trainer.profiler': lightning.Trainer takes"):
        load_config("digits", [f"trainer.profiler={few}"])  # ... and checked as any other value


def test_aliases_that_share_a_section_still_work(tmp_path: Path) -> None:
    config = tmp_path / "shared.yaml"
    config.write_text(
        "compare:\n  strategies:\n"
        "    - {name: a, overrides: &o {loss.negatives: {name: hard, beta: 2.0}}}\n"
        "    - {name: b, overrides: *o}\n"
    )
    cfg = load_config(config)
    shared = {"loss.negatives": {"name": "hard", "beta": 2.0}}
    assert [s.overrides for s in cfg.compare.strategies] == [shared, shared]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("trainer:\n  profiler: &a [*a]\n", "the node anchored at line 2 holds an alias of itself"),
        ("train: &t\n  epochs: 2\n  x: *t\n", "the node anchored at line 1 holds an alias of itself"),
        ("trainer:\n  profiler: " + "[" * 300 + "]" * 300 + "\n",
         f"it nests deeper than {MAX_YAML_DEPTH} levels"),
        ("sweep:\n  grid:\n    [1]: [1]\n", "the key at line 3 is a list; a key must be a name"),
    ],
)
def test_recursive_deep_and_unhashable_yaml_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value).startswith(f"config file '{config}': {message}"), caught.value


def test_an_integer_too_long_for_python_names_the_key_and_its_range(tmp_path: Path) -> None:
    huge = "1" + "0" * 5000
    expected = ("invalid value for 'train.epochs': must be an integer from 1 to 10000000, "
                "got a 5001-digit integer")
    with pytest.raises(ConfigError) as caught:
        load_config("digits", [f"train.epochs={huge}"])
    assert str(caught.value) == expected
    config = tmp_path / "huge.yaml"
    config.write_text(f"train:\n  epochs: {huge}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(config)
    assert str(caught.value) == expected


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.width=" + "9" * 30,
         f"invalid value for 'model.width': must be an integer from 1 to {2**63 - 1}, got {'9' * 30}"),
        ("eval.kwise=[" + "9" * 30 + "]",
         f"invalid value for 'eval.kwise': its integers must be from {-(2**63)} "),
        ("compare.seeds=[-1]", "invalid value for 'compare.seeds[0]': must be >= 0, got -1"),
        ("trainer.max_steps=" + "9" * 30, "invalid value for 'trainer': its integers must be from"),
    ],
)
def test_integers_beyond_64_bits_and_bad_seeds_name_the_key(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("digits", [override])
    assert str(caught.value).startswith(message), caught.value


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("loss.negatives.name=[a]", "loss.negatives.name"),
        ("loss.objective.name={a: 1}", "loss.objective.name"),
        ("data.dataset=[a]", "data.dataset"),
        ("data.dataset={a: 1}", "data.dataset"),
        ("loss.negatives={name: [hard]}", "loss.negatives.name"),
    ],
)
def test_a_list_or_mapping_where_a_name_is_expected(override: str, key: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("digits", [override])
    line = str(caught.value)
    assert line.startswith(f"invalid value for '{key}': ") and "must be one of" in line, line
    assert "\n" not in line and len(line) < 300, line


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.max_steps=[1]",
         "invalid value for 'trainer.max_steps': lightning.Trainer takes int, got [1]"),
        ("trainer.limit_train_batches=abc",
         "invalid value for 'trainer.limit_train_batches': lightning.Trainer takes float or int or null, "
         "got 'abc'"),
        ("trainer.profiler=3",
         "invalid value for 'trainer.profiler': lightning.Trainer takes Profiler or str or null, got 3"),
        ("trainer.min_epochs=1e999",
         "invalid value for 'trainer.min_epochs': lightning.Trainer takes int or null, got inf"),
        ("trainer.max_steps.x=1", "'trainer' takes lightning.Trainer arguments one level deep "
                                  "(trainer.max_steps=VALUE); got override 'trainer.max_steps.x'"),
    ],
)
def test_trainer_values_are_checked_against_lightning_s_types(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("digits", [override])
    assert str(caught.value) == message


def test_trainer_values_of_the_right_type_pass() -> None:
    cfg = load_config("digits", ["trainer.max_steps=5", "trainer.limit_train_batches=0.5",
                                 "trainer.max_time={days: 1}", "trainer.profiler=simple"])
    assert cfg.trainer == {"max_steps": 5, "limit_train_batches": 0.5, "max_time": {"days": 1},
                           "profiler": "simple"}


def test_a_field_of_several_types_lists_them_under_its_own_key() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config("digits", ["loss.objective={name: debiased, tau_plus: [1]}"])
    assert str(caught.value) == ("invalid value for 'loss.objective.tau_plus': must be a number or a string, "
                                 "got [1]")


def test_a_path_too_long_for_the_filesystem_is_an_invalid_value() -> None:
    with pytest.raises(ConfigError, match=r"^invalid value for 'eval.senteval': must be a folder of SentEval "
                                          r"tasks, got 'aaaa"):
        load_config("sentences", ["eval.senteval=" + "a" * 300])


@pytest.mark.slow
def test_every_override_of_every_key_is_a_config_error_or_a_config() -> None:
    """A little fuzzing of the override parser: no value of any key of ``digits`` raises anything but
    :class:`ConfigError` (nested lists, mappings, null, booleans, 1e999, nan, huge integers, ...)."""
    from hardneg.pipeline.config import flat_config

    values = ["[a]", "{a: 1}", "[[1, [2]]]", "null", "true", "1e999", "nan", "-inf", "1" + "0" * 5000,
              "9" * 30, "1.5", "''"]
    keys = [*flat_config(load_config("digits")), "loss.negatives.beta", "trainer.max_steps"]
    for key in keys:
        for value in values:
            try:
                dump_yaml(load_config("digits", [f"{key}={value}"]))
            except ConfigError as err:
                assert "\n" not in str(err), (key, value, err)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_time": "x"}, "trainer.max_time='x'): `Timer(duration='x')` is not a valid duration"),
        ({"profiler": "bogus"}, "trainer.profiler='bogus'): When passing string value for the `profiler`"),
    ],
)
def test_what_lightning_trainer_refuses_is_one_config_error_naming_the_settings(
    tmp_path: Path, options: dict, named: str
) -> None:
    from hardneg.pipeline.trainer import build_trainer

    with pytest.raises(ConfigError) as caught:
        build_trainer(run_dir=tmp_path, epochs=1, progress=False, tensorboard=False, options=options)
    line = str(caught.value)
    given = "train.accelerator='cpu', train.devices=1, train.strategy='auto', train.precision='32-true', "
    assert line.startswith(f"lightning.Trainer refused the settings ({given}") and named in line, line

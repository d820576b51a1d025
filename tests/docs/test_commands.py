"""Every ``hardneg train|compare|sweep NAME key=value ...`` the README and docs/ show resolves, from
outside the repository, to a config shipped in the package and validates with its overrides.

Placeholders (``CONFIG``, ``DIR``, ``RUN``, ``$ds``, ``theory_*``, a user's ``toy.yaml``) stand for
the user's values: ``DIR``-like values become a temporary folder, a command naming only a
placeholder is skipped. A command shown with the ``error: ...`` line it answers must fail with
exactly that message (``train`` validates the run's own settings; ``compare`` and ``sweep`` also
every strategy and sweep point).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from hardneg.config.errors import ConfigError
from hardneg.pipeline.config import load_config, parse_overrides

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VALUE = r"""(?:'[^'\n]*'|"[^"\n]*"|[^\s`|)#'"]+)"""
COMMAND = re.compile(
    rf"hardneg (train|compare|sweep) ([^\s`|)#]+)((?: +[\w.]+={VALUE})*)[^\n]*(?:\n(error: [^\n]+))?"
)
PLACEHOLDER = re.compile(r"^(CONFIG|RUN|NAME)$|[$*]|\.yaml$")
Command = tuple[str, str, str, tuple[str, ...], str]


def _commands() -> list[Command]:
    found: dict[Command, None] = {}
    for page in PAGES:
        text = page.read_text(encoding="utf-8").replace("\\\n", " ")
        for match in COMMAND.finditer(text):
            verb, name, error = match.group(1), match.group(2), match.group(4) or ""
            if PLACEHOLDER.search(name):
                continue
            overrides = tuple(re.findall(rf"[\w.]+={VALUE}", match.group(3)))
            roots = [o.split("=", 1)[1] for o in overrides if o.startswith("data.root=")]
            if error and any(error.startswith(f"error: {r}") for r in roots):
                continue  # an error about the file's contents, raised when it is read (tests/text)
            found[(page.name, verb, name, overrides, error)] = None
    return list(found)


COMMANDS = _commands()


def test_the_docs_show_commands() -> None:
    assert len(COMMANDS) >= 30
    names = {c[2] for c in COMMANDS}
    assert {"graphs", "articles", "studies/fmnist_compare", "paper/graphs_tu_MUTAG"} <= names
    assert sum(bool(c[4]) for c in COMMANDS) >= 2  # the pages show errors too


@pytest.mark.parametrize(
    ("page", "verb", "name", "overrides", "error"),
    COMMANDS,
    ids=[f"{p}:{v} {n} {' '.join(o)}" for p, v, n, o, _ in COMMANDS],
)
def test_a_documented_command_resolves_and_validates_outside_the_repository(
    page: str, verb: str, name: str, overrides: tuple[str, ...], error: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)  # configs come from the package, not from the working directory
    words = shlex.split(" ".join(overrides))  # as the shell passes them: quotes removed
    concrete = [re.sub(r"=(DIR|OUT_DIR)$", f"={tmp_path}", w) for w in words]
    for i, word in enumerate(concrete):  # a data file: one that exists (a folder is refused for a file)
        if found := re.search(r"=([\w.-]+\.(tsv|txt|xml\.bz2))$", word):
            (tmp_path / found.group(1)).touch()
            concrete[i] = word.replace(f"={found.group(1)}", f"={tmp_path / found.group(1)}")
    parsed = parse_overrides(concrete)
    if error:
        with pytest.raises(ConfigError) as err:
            load_config(name, parsed, check_groups=verb != "train")
        assert f"error: {err.value}" == error, page
        return
    cfg = load_config(name, parsed, check_groups=verb != "train")
    assert cfg.name, f"{page}: hardneg {verb} {name} {' '.join(overrides)}"

#!/usr/bin/env bash
# The package as a user gets it: build the sdist and, from it, the wheel; check what they carry;
# install the wheel in a fresh venv with its core dependencies only (torch==2.13.0 first, so pip
# never pulls another torch); run the README's library examples there and `hardneg --help`, which
# must answer with the one line naming the "cli" extra (exit 2). About a minute, most of it
# unpacking torch. Usage: .ci/check_wheel.sh [PYTHON]   (default .venv/bin/python: needs `build`)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
TORCH=torch==2.13.0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
t0=$SECONDS
step() { echo "check_wheel: [$((SECONDS - t0)) s] $*"; }

step "build the sdist, then the wheel from it"
"$PY" -m build --no-isolation --outdir "$tmp/dist" . > "$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
sdist=$(ls "$tmp"/dist/hardneg-*.tar.gz)
wheel=$(ls "$tmp"/dist/hardneg-*.whl)

step "what they carry: every packaged config in the wheel, the whole test suite in the sdist"
"$PY" - "$sdist" "$wheel" <<'EOF'
import sys, tarfile, zipfile
from pathlib import Path

sdist, wheel = sys.argv[1:]
in_wheel = set(zipfile.ZipFile(wheel).namelist())
configs = sorted(p.relative_to("src").as_posix() for p in Path("src/hardneg/configs").rglob("*") if p.is_file())
configs += sorted(p.relative_to("src").as_posix() for p in Path("src/hardneg/reproduce/designs").rglob("*")
                  if p.is_file())  # the pre-registered designs and their pilots
missing = [c for c in configs if c not in in_wheel]
assert configs and not missing, f"configs missing from the wheel: {missing}"
assert not [n for n in in_wheel if n.startswith(("tests/", "docs/"))], "the wheel carries tests/ or docs/"
with tarfile.open(sdist) as tar:
    in_sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
wanted = [p.as_posix() for d in ("tests", "docs", "examples", "benchmarks", ".ci") for p in Path(d).rglob("*")
          if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"]
wanted += ["Makefile", "LICENSE", "CHANGELOG.md", "CITATION.cff", "README.md", "pyproject.toml"]
missing = sorted(set(wanted) - in_sdist)
assert not missing, f"files missing from the sdist: {missing[:20]}"
print(f"  wheel: {len(configs)} configs; sdist: {len(wanted)} files of the tests, docs and entry points")
EOF

step "a fresh venv: $TORCH first, then the wheel with its core dependencies"
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check "$TORCH"
"$tmp/venv/bin/python" -m pip install --quiet --no-cache-dir --disable-pip-version-check "$wheel" "$TORCH"
"$tmp/venv/bin/python" - <<'EOF'
import importlib.metadata as md
names = sorted(d.metadata["Name"].lower() for d in md.distributions())
extras = {"typer", "lightning", "scikit-learn", "scipy", "pydantic", "matplotlib", "torch-geometric", "pot"}
assert not extras & set(names), f"a core install pulled optional packages: {sorted(extras & set(names))}"
assert md.version("torch").startswith("2.13.0"), md.version("torch")
EOF

step "the README's library examples (section 'Use the loss in your own training loop')"
"$PY" - README.md "$tmp/example.py" <<'EOF'
import re, sys
from pathlib import Path

text = Path(sys.argv[1]).read_text(encoding="utf-8")
section = text.split("\n## Use the loss in your own training loop\n", 1)[1].split("\n## ", 1)[0]
blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
assert blocks, "no python block in the README's library section"
Path(sys.argv[2]).write_text("\n".join(f"exec({b!r}, {{}})" for b in blocks), encoding="utf-8")
print(f"  {len(blocks)} blocks")
EOF
(cd "$tmp" && "$tmp/venv/bin/python" example.py > example.log) || { cat "$tmp/example.log"; exit 1; }

step "hardneg --help without the cli extra: one line naming it, exit 2"
set +e
out=$("$tmp/venv/bin/hardneg" --help 2>&1)
rc=$?
set -e
echo "  $out"
if [ "$rc" -ne 2 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] \
    || ! grep -qF 'needs the "cli" extra: pip install "hardneg[cli]"' <<< "$out"; then
    echo "check_wheel: expected one 'needs the \"cli\" extra' line and exit 2, got exit $rc" >&2
    exit 1
fi
step "ok"

"""Rewrite the README's findings block and docs/studies.md's ``make run`` tables from a report.

::

    python scripts/update_findings.py                       # from runs/reproduce/small (make run's report)
    python scripts/update_findings.py --commit e15e050 --seconds 651   # a report without claims.json
    python scripts/update_findings.py --render-only         # re-render from the committed snapshot

The first form writes ``docs/results/reproduce-small.json`` (the snapshot: per claim the estimate,
its interval, the MDE, p, the verdict; the commit, data, wall time and budget) from the report's
files and rewrites both blocks in place; ``--render-only`` skips the report and re-renders the
committed snapshot (after a change to :mod:`hardneg.reproduce.markdown`). ``hardneg reproduce
--budget small --markdown`` does the first form at the end of a run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hardneg._io import atomic_write_text
from hardneg.reproduce.markdown import (
    FINDINGS,
    GROUPS,
    findings_markdown,
    groups_markdown,
    replace_block,
    update_findings,
)
from hardneg.reproduce.snapshot import load_snapshot

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and rewrite the blocks; prints the files written. Returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", type=Path, default=ROOT / "runs" / "reproduce" / "small",
                        help="the report folder (default: runs/reproduce/small)")
    parser.add_argument("--snapshot", type=Path, default=ROOT / "docs" / "results" / "reproduce-small.json")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--studies", type=Path, default=ROOT / "docs" / "studies.md")
    parser.add_argument("--command", default="make run", help="the command that produced the report")
    parser.add_argument("--commit", help="the report's commit, when its claims.json does not record it")
    parser.add_argument("--seconds", type=float,
                        help="the report's wall time, when claims.json does not record it")
    parser.add_argument("--render-only", action="store_true", help="re-render the blocks from --snapshot")
    args = parser.parse_args(argv)
    try:
        if args.render_only:
            snap = load_snapshot(args.snapshot)
            texts = [(path, replace_block(path.read_text(encoding="utf-8"), name, body))  # all checked first
                     for path, name, body in ((args.readme, FINDINGS, findings_markdown(snap)),
                                              (args.studies, GROUPS, groups_markdown(snap)))]
            for path, text in texts:
                atomic_write_text(path, text)
        else:
            update_findings(args.run, snapshot=args.snapshot, readme=args.readme, studies=args.studies,
                            command=args.command, commit=args.commit, seconds=args.seconds)
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    written = [args.readme, args.studies] if args.render_only else [args.snapshot, args.readme, args.studies]
    print("wrote " + ", ".join(str(p) for p in written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The ``hardneg`` command line.

::

    hardneg train CONFIG [key=value ...] [--out DIR] [--resume] [--force]
    hardneg evaluate RUN [--checkpoint PATH] [--no-figures] [the options of the run's modality]
    hardneg compare CONFIG [key=value ...] [--out DIR] [--resume] [--force]
    hardneg sweep CONFIG [key=value ...] [--out DIR] [--resume] [--force]
    hardneg reproduce [--budget small|medium|full|paper] [--pilot] [--data NAME=DIR] [--device cpu|gpu]
                                               # the papers' claims, run and judged -> claims.md
    hardneg config CONFIG [key=value ...]      # print the resolved config
    hardneg configs                            # list the packaged configs
    hardneg theory ...                         # bounds, optimal K, collisions (if installed)
    hardneg data wiki OUT.tsv --dump DUMP      # a Wikipedia dump -> sentences labelled by article
    hardneg data senteval DIR                  # MR, CR, SUBJ-like, TREC in SentEval layouts (offline)

``CONFIG`` is a YAML path or the name of a packaged config (``hardneg configs`` lists them).
Overrides use dotted keys: ``loss.negatives.beta=0.5 train.epochs=3 eval.kwise=[1,4]``.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

from hardneg._packages import extra_error

# Without the "cli" extra the ImportError names it; the console script (hardneg._entry) checks the
# whole extra before importing this package and exits with one line instead.
try:
    import typer
    import typer.core
    import typer.main
except ModuleNotFoundError as _err:
    raise extra_error(_err, "hardneg.cli (the command line)") from _err

from hardneg.cli._options import HELP, describe
from hardneg.cli.data import app as data_app
from hardneg.cli.theory import app as theory_app

if TYPE_CHECKING:
    from hardneg.modalities import EvaluateOption

__all__ = ["app", "main"]

app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich panels print '<bool>' for flags
    context_settings=HELP,  # -h is --help, on every command and sub-command
    name="hardneg",
    help="Contrastive learning in which the distribution of negatives is what you control.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ConfigArg = Annotated[
    str, typer.Argument(help="YAML file, or a packaged config name (see `hardneg configs`). The modules its "
                             "`imports:` lists are imported first, which runs their code: use only configs "
                             "you trust.")
]
OverridesArg = Annotated[
    list[str] | None,
    typer.Argument(help="dotted key=value overrides, e.g. loss.negatives.beta=0.5 train.epochs=3"),
]


def _user_path(value: Path | None) -> Path | None:
    """A path option with ``~`` expanded once, here (a quoted ``'~'`` reaches hardneg as it is), so
    that every writer of the run (Lightning's included) gets the same folder."""
    return value.expanduser() if value is not None else None


OutOpt = Annotated[Path | None, typer.Option(
    "--out", help="output folder (default: <out_dir>/<name>)", callback=_user_path)]
ResumeOpt = Annotated[bool, typer.Option("--resume", help="continue from the last epoch checkpoint(s)")]
ForceOpt = Annotated[bool, typer.Option(
    "--force", help="overwrite an output folder hardneg made, when every file in it is one hardneg wrote")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress output")]


def _print_version(value: bool) -> None:
    if value:
        from hardneg import __version__

        typer.echo(f"hardneg {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True, help="print the version and exit")] = False,
) -> None:
    """Contrastive learning in which the distribution of negatives is what you control."""


def _echo(msg: str) -> None:
    typer.echo(msg, err=True)


def _quiet_lightning() -> None:
    from hardneg.pipeline.trainer import quiet_lightning  # imports Lightning (its loggers start at INFO)

    quiet_lightning()


def _fail(err: BaseException) -> typer.Exit:
    _echo(f"error: {describe(err)}")
    return typer.Exit(code=2)


def _load(config: str, overrides: list[str] | None, *, fits: bool = False):  # type: ignore[no-untyped-def]
    """The validated config; with ``fits``, also refused when it cannot fit in memory (before
    Lightning is even imported: seconds, not minutes)."""
    from hardneg.config import ConfigError
    from hardneg.pipeline.config import load_config

    try:
        cfg = load_config(config, overrides or [])
        if fits:
            from hardneg.modalities import get_modality
            from hardneg.pipeline.resources import check_memory

            check_memory(cfg, get_modality(cfg.data.dataset))
    except ConfigError as err:
        raise _fail(err) from None
    return cfg


# Failures a user can cause: bad paths, full or read-only disks (OSError), bad values and damaged
# files (ValueError: ConfigError and CheckpointError are ValueErrors), sizes out of range.
_USER_ERRORS = (OSError, ValueError, RuntimeError, OverflowError)


def _interrupted_message(config: str, run_dir: Path, *, existed: bool = True, signame: str = "SIGINT") -> str:
    """What a stop signal left behind, naming only the checkpoint files that exist, and what --resume does.

    ``--resume`` continues from the last finished epoch: ``last.ckpt``, or ``epochNNN.ckpt`` when
    the save of ``last.ckpt`` was cut short; ``interrupted.ckpt`` is saved mid-epoch, for
    inspection only, and the partial epoch is discarded. ``existed``: the run folder was there
    before the command started.
    """
    stopped = "interrupted" if signame == "SIGINT" else f"interrupted by {signame}"
    if not existed and not run_dir.exists():
        return f"{stopped} before the run folder '{run_dir}' was created: nothing was written"
    from hardneg.pipeline.checkpoints import checkpoint_files

    folder = run_dir / "checkpoints"
    epochs = [p.name for p in checkpoint_files(folder)]  # last.ckpt first, then epochNNN.ckpt by name
    meaning = {name: f"the end of epoch {int(name[5:].split('.')[0].split('-')[0]) + 1}"
               for name in epochs if name != "last.ckpt"}
    meaning["last.ckpt"] = "the last finished epoch"
    meaning["interrupted.ckpt"] = "the moment of interruption, for inspection only"
    names = epochs + (["interrupted.ckpt"] if (folder / "interrupted.ckpt").is_file() else [])
    if not names:  # a run stopped before training leaves nothing that blocks the same command
        from hardneg.pipeline.run_folder import failed_start

        plain = not run_dir.is_dir() or not any(run_dir.iterdir()) or failed_start(run_dir)
        return (f"{stopped} before the first checkpoint; start again with "
                f"`hardneg train {config} ... --out {run_dir}{'' if plain else ' --force'}`")
    listing = ", ".join(f"{name} = {meaning[name]}" for name in names)
    again = f"`hardneg train {config} ... --resume --out {run_dir}`"
    if not epochs:
        return (f"{stopped} during the first epoch: checkpoints in {folder} ({listing}); {again} starts "
                "from scratch (no epoch finished; the partial epoch is discarded)")
    start = "the last finished epoch" if "last.ckpt" in epochs else f"{epochs[-1]}, {meaning[epochs[-1]]}"
    return (f"{stopped}: checkpoints in {folder} ({listing}); continue with {again} (resumes from "
            f"{start}; the partial epoch is discarded)")


def _stop_code(signum: int) -> int:
    """The shell's status for a process stopped by ``signum`` (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + int(signum)


@app.command()
def train(config: ConfigArg, overrides: OverridesArg = None, out: OutOpt = None, resume: ResumeOpt = False,
          force: ForceOpt = False, quiet: QuietOpt = False) -> None:
    """Pre-train one encoder, evaluate it and write a run folder.

    SIGINT (Ctrl-C), SIGTERM and SIGHUP stop it the same way: the checkpoints are kept, one message
    says how to continue with ``--resume``, and the exit status is 128 + the signal's number.
    """
    import signal

    from hardneg._signals import interrupt_signals

    with interrupt_signals() as received:
        run_dir: Path | None = out
        existed = out is not None and out.exists()
        try:
            cfg = _load(config, overrides, fits=True)
            run_dir = out if out is not None else Path(cfg.out_dir) / cfg.name
            existed = existed or run_dir.exists()
            _train(cfg, out, resume=resume, force=force, quiet=quiet)
        except (KeyboardInterrupt, SystemExit) as err:  # Lightning exits with 1 after Ctrl-C
            if isinstance(err, SystemExit) and err.code in (0, None) and not received:
                raise
            signum = received[-1] if received else getattr(err, "signum", signal.SIGINT)
            name = signal.Signals(signum).name
            if run_dir is None:
                _echo(f"interrupted ({name}) before the config was read: nothing was written")
            else:
                _echo(_interrupted_message(config, Path(run_dir), existed=existed, signame=name))
            raise typer.Exit(code=_stop_code(signum)) from None


def _background_oserrors_once(args: threading.ExceptHookArgs) -> None:
    """A writer thread's ``OSError`` (TensorBoard's event writer on a full disk) is raised again in
    the main thread when it flushes, which reports it in one line: no traceback from the thread."""
    if isinstance(args.exc_value, OSError):
        return
    threading.__excepthook__(args)


def _train(cfg, out: Path | None, *, resume: bool, force: bool, quiet: bool) -> None:  # type: ignore[no-untyped-def]
    _quiet_lightning()
    from hardneg.pipeline.experiment import train_run
    from hardneg.pipeline.run_folder import timing_lines

    start = time.perf_counter()
    previous_hook, threading.excepthook = threading.excepthook, _background_oserrors_once
    try:
        result = train_run(cfg, out, resume=resume, force=force, quiet=quiet)
    except _USER_ERRORS as err:
        if isinstance(err, OSError) and err.filename is None and err.strerror:
            # an error of a writer that names no file (TensorBoard's): the run folder it wrote into
            run_dir = out if out is not None else Path(cfg.out_dir) / cfg.name
            err = OSError(err.errno, err.strerror, str(run_dir))
        raise _fail(err) from None
    finally:  # the hook is this command's, not the process's (tests call the CLI in-process)
        threading.excepthook = previous_hook
    if result is None:  # a non-zero DDP rank
        return
    if not quiet:
        _echo(f"run folder: {result.run_dir}")
    typer.echo(" ".join(f"{k}={100 * v:.2f}" for k, v in result.eval.items()))
    if not quiet:
        _echo("\n".join(timing_lines(result.timing)))
        _echo(f"wall time: {time.perf_counter() - start:.1f} s")


class _EvaluateCommand(typer.core.TyperCommand):
    """``evaluate`` with the options the registered modalities declare
    (:attr:`~hardneg.modalities.Modality.evaluate_options`), added when the command's options are
    first needed (parsing it, its help): the modalities import torch, which ``hardneg --help`` does
    not. The values given go to :func:`_modality_overrides` through ``ctx.meta``."""

    _added = False

    def get_params(self, ctx: Any) -> list[Any]:
        if not self._added:
            self._added = True
            self.params.extend(_modality_options())
        return cast(list[Any], super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        declared = {p.name for p in _modality_options()}
        given = {n: ctx.params.pop(n) for n in list(ctx.params) if n in declared}
        ctx.meta[_EVALUATE_OPTIONS] = {n: v for n, v in given.items() if v is not None}
        return super().invoke(ctx)


_EVALUATE_OPTIONS = "hardneg.evaluate_options"
_OPTIONS: list[Any] = []


def _modality_options() -> list[Any]:
    """The command-line options of every :class:`~hardneg.modalities.EvaluateOption` name of the
    registered modalities (the first declaration of a name wins), each help naming the modalities it
    applies to; built by typer itself from a function of those parameters."""
    if _OPTIONS:
        return _OPTIONS
    import inspect

    from hardneg.modalities import dataset_names, get_modality
    from hardneg.modalities.base import evaluate_owners

    seen: dict[str, EvaluateOption] = {}
    for name in dataset_names():
        for option in get_modality(name).evaluate_options:
            seen.setdefault(option.name, option)
    params = []
    for option in seen.values():
        owners = ", ".join(sorted({m.name for m in evaluate_owners(option.name)}))
        declared = typer.Option(option.flag, help=f"runs of {owners}: {option.help}",
                                callback=_user_path if option.type is Path else None)
        params.append(inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, default=None,
                                        annotation=Annotated[option.type | None, declared]))

    def options(**_: Any) -> None:  # pragma: no cover - never called: typer reads its signature
        """The modalities' options."""

    options.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    options.__annotations__ = {p.name: p.annotation for p in params}
    holder = typer.Typer(add_completion=False)
    holder.command()(options)
    _OPTIONS.extend(typer.main.get_command(holder).params)
    return _OPTIONS


def _modality_overrides(run: Path, values: dict[str, object]) -> dict[str, object] | None:
    """The ``eval.*`` overrides of the modality options given for the run in ``run`` (``None``: none
    given, or no config to read: :func:`~hardneg.pipeline.experiment.evaluate_run` names it);
    an option its modality does not declare is a ``ValueError`` naming the modalities it applies to."""
    if not values or not (run / "config.yaml").is_file():
        return None
    from hardneg.modalities import get_modality
    from hardneg.modalities.base import evaluate_owners
    from hardneg.pipeline.config import load_config

    cfg = load_config(run / "config.yaml")
    modality = get_modality(cfg.data.dataset)
    declared = {o.name for o in modality.evaluate_options}
    for name in values:
        if name not in declared:
            owners = ", ".join(sorted({m.name for m in evaluate_owners(name)}))
            raise ValueError(f"--{name.replace('_', '-')} evaluates runs of {owners}; the run '{run}' was "
                             f"trained on data set '{cfg.data.dataset}' ({modality.name})")
    return modality.evaluate_overrides(cfg, values)


@app.command(cls=_EvaluateCommand)
def evaluate(ctx: typer.Context,
             run: Annotated[Path, typer.Argument(
                 help="run folder written by `hardneg train` (the modules its config.yaml lists under "
                      "`imports:` are imported, which runs their code)", callback=_user_path)],
             checkpoint: Annotated[Path | None, typer.Option(help="checkpoint (default: last.ckpt)",
                                                             callback=_user_path)] = None,
             figures: Annotated[bool, typer.Option("--figures/--no-figures", help="write figures")] = True,
             ) -> None:
    """Evaluate a saved run from its checkpoint (its modality's evaluation, with the options below).

    With an option of the run's modality the result is added to the run's ``metrics.json``
    (``evaluations``), beside the run's own results, never over them.
    """
    _quiet_lightning()
    from hardneg.pipeline.experiment import evaluate_run

    try:
        overrides = _modality_overrides(run, ctx.meta.get(_EVALUATE_OPTIONS, {}))
        result = evaluate_run(run, checkpoint=checkpoint, figures_on=figures, overrides=overrides)
    except _USER_ERRORS as err:
        raise _fail(err) from None
    typer.echo(" ".join(f"{k}={100 * v:.2f}" for k, v in result.eval.items()))


def _print_group(result, label: str, wall: float, quiet: bool) -> None:  # type: ignore[no-untyped-def]
    from hardneg.pipeline.groups import format_table, paired_table
    from hardneg.pipeline.run_folder import timing_lines

    seeds = max((len(v) for v in result.runs.values()), default=0)
    typer.echo(format_table(result.table, label=label, metrics=result.metrics, seeds=seeds))
    table = paired_table(result)
    if table:
        typer.echo(f"\npaired differences to {next(iter(result.runs))} (same seeds):\n{table}")
    if not quiet:
        wrote = ", ".join(str(p.relative_to(result.root)) for p in result.written)
        _echo(f"\nresults: {result.root} ({wrote})")
        _echo("time summed over runs:\n" + "\n".join(timing_lines(result.timing)))
        _echo(f"wall time: {wall:.1f} s")


def _run_group(kind: str, config: str, overrides: list[str] | None, out: Path | None, resume: bool,
               force: bool, quiet: bool) -> None:
    cfg = _load(config, overrides, fits=True)
    _quiet_lightning()
    from hardneg.pipeline.groups import GroupInterrupted, run_group

    start = time.perf_counter()
    label = "strategy" if kind == "compare" else "grid point"
    try:
        result = run_group(cfg, kind, out, resume=resume, force=force, quiet=quiet, echo=_echo)
    except _USER_ERRORS as err:
        raise _fail(err) from None
    except GroupInterrupted as stop:
        _print_group(stop.result, label, time.perf_counter() - start, quiet)
        import shlex

        again = shlex.join(
            ["hardneg", kind, config, *(overrides or []), "--out", str(stop.result.root), "--resume"]
        )
        _echo(f"interrupted: {stop.done} of {stop.total} runs finished (the tables above and summary.md "
              f"are partial); continue with `{again}` (finished runs are reused, an interrupted run "
              "resumes from its last finished epoch)")
        raise typer.Exit(code=130) from None
    _print_group(result, label, time.perf_counter() - start, quiet)


@app.command()
def compare(config: ConfigArg, overrides: OverridesArg = None, out: OutOpt = None, resume: ResumeOpt = False,
            force: ForceOpt = False, quiet: QuietOpt = False) -> None:
    """Several negative strategies x seeds on the same data and budget -> table + figures."""
    _run_group("compare", config, overrides, out, resume, force, quiet)


@app.command()
def sweep(config: ConfigArg, overrides: OverridesArg = None, out: OutOpt = None, resume: ResumeOpt = False,
          force: ForceOpt = False, quiet: QuietOpt = False) -> None:
    """A grid over dotted keys (sweep.grid) x seeds -> table + accuracy curves."""
    _run_group("sweep", config, overrides, out, resume, force, quiet)


@app.command()
def reproduce(
    budget: Annotated[str, typer.Option(
        "--budget", help="small (minutes on 2 CPU cores), medium (the confirmatory run: about 40 "
                         "minutes), full (hours) or paper (the papers' settings: GPU and data "
                         "sets)")] = "small",
    out: Annotated[Path, typer.Option("--out", help="output folder (finished runs are reused)",
                                      callback=_user_path)] = Path("runs/reproduce"),
    only: Annotated[
        list[str] | None, typer.Option("--only", help="run only this claim id (repeatable; exploratory: "
                                       "unadjusted p-values, written to claims-only-<ids>.md)")
    ] = None,
    data: Annotated[list[str] | None, typer.Option(
        "--data", help="NAME=DIR: the folder of a data set the claims need (the names the report's "
                       "'not run here' commands use; repeatable)")] = None,
    device: Annotated[str | None, typer.Option(
        "--device", help="cpu or gpu (default: the budget's; paper runs on the GPU)")] = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="then write docs/results/reproduce-<budget>.json and rewrite README.md's "
                           "findings block and docs/studies.md's make-run tables of the budget (medium: "
                           "and docs/results/reproduce-medium.md, the whole report) from the report "
                           "(from the repository root; --budget small or medium, without --only)")] = False,
    pilot: Annotated[bool, typer.Option(
        "--pilot", help="run the design's pilot instead (its own seeds and data draw) and write "
                        "<out>/<budget>-pilot/pilot.json, to commit as designs/pilots/<budget>.json "
                        "before the runs")] = False,
) -> None:
    """Run the papers' claims as seeded comparisons -> claims.md, claims.csv, figures/claims.png."""
    # no _quiet_lightning() here: the groups quiet Lightning where a run trains (their workers, or
    # this process), so a reproduction that reuses every run never imports it
    from hardneg.reproduce.run import ReproduceInterrupted, resume_command, run_pilot, run_reproduce

    start = time.perf_counter()
    try:
        roots = _data_roots(data)
        if device is not None and device not in ("cpu", "gpu"):
            raise ValueError(f"--device must be cpu or gpu, got {device!r}")
        if markdown and (budget not in ("small", "medium") or only or pilot):
            raise ValueError("--markdown renders a full report: it needs --budget small or medium without "
                             f"--only or --pilot, got --budget {budget}{' with --only' if only else ''}"
                             f"{' with --pilot' if pilot else ''}")
        if pilot:
            if only:
                raise ValueError("--pilot runs every claim of the design's pilot: it takes no --only")
            written = run_pilot(budget=budget, out=out, force=force, data=roots, device=device,
                                echo=(lambda msg: None) if quiet else _echo)
            typer.echo(written.read_text(encoding="utf-8"))
            return
        if markdown and not (Path("README.md").is_file() and Path("docs/studies.md").is_file()):
            raise ValueError("--markdown must run from the repository root (README.md and docs/studies.md "
                             f"beside it), got {str(Path.cwd())!r}")
        result = run_reproduce(budget=budget, out=out, only=only, force=force, data=roots, device=device,
                               echo=(lambda msg: None) if quiet else _echo)
    except _USER_ERRORS as err:
        raise _fail(err) from None
    except ReproduceInterrupted as stop:
        report = stop.result.report or stop.result.root / "claims.md"
        typer.echo(report.read_text().split("\n## ", 1)[0].rstrip())
        _echo(f"interrupted: partial report in {report}; continue with "
              f"`{resume_command(budget, out, only)}` (finished runs are reused)")
        raise typer.Exit(code=130) from None
    from hardneg.reproduce.report import summary_table

    claims = [r for r in result.rows if r.get("section", "claim") == "claim"]
    theorems = [r for r in result.rows if r.get("section") == "theorem"]
    typer.echo(summary_table(claims))
    if theorems:
        typer.echo("\ntheorem checks (each alone, outside the claims' family):\n" + summary_table(theorems))
    ran = [r for r in result.rows if r.get("folder")]
    if ran:
        family = ("exploratory: unadjusted p-values, no family verdict" if only else
                  "one Holm family over the budget's planned claims, α = 0.05")
        typer.echo(f"\nsources and settings ({family}):")
        for r in ran:
            typer.echo(f"- {r['claim']}: {r['source']}. {r['setting']}.")
    commands = [r for r in result.rows if r.get("command")]
    if commands:
        typer.echo("\nnot run here (what is missing, and the command that runs it):")
        for r in commands:
            typer.echo(f"- {r['claim']}: {r['setting']}\n    {r['command']}")
    if not quiet:
        report = result.report or result.root / "claims.md"
        _echo(f"\nreport: {report} ({report.stem}.csv, figures/{report.stem}.png)")
        _echo(f"wall time: {time.perf_counter() - start:.1f} s")
    if markdown:
        from hardneg._io import atomic_write_text
        from hardneg.reproduce.markdown import blocks, update_findings

        snapshot = Path(f"docs/results/reproduce-{budget}.json")
        command = "make run" if budget == "small" else f"hardneg reproduce --budget {budget}"
        try:
            update_findings(result.root, snapshot=snapshot, readme=Path("README.md"),
                            studies=Path("docs/studies.md"), command=command,
                            seconds=time.perf_counter() - start)
            if budget != "small":  # the whole report beside its snapshot
                atomic_write_text(snapshot.with_suffix(".md"),
                                  (result.root / "claims.md").read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise _fail(err) from None
        findings, groups = blocks(budget)
        _echo(f"rewrote README.md's {findings} block and docs/studies.md's {groups} tables "
              f"(snapshot: {snapshot})")


def _data_roots(items: list[str] | None) -> dict[str, str]:
    """``["name=/data/folder", ...]`` → ``{"name": "/data/folder"}`` (``--data``)."""
    roots = {}
    for item in items or []:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise ValueError(f"--data must be NAME=DIR, got {item!r}")
        roots[name.strip()] = str(Path(folder.strip()).expanduser())
    return roots


@app.command("config")
def show_config(config: ConfigArg, overrides: OverridesArg = None) -> None:
    """Print the resolved config (defaults + file + overrides) as YAML.

    Like train, it first imports the modules the config lists under `imports:` (found on Python's
    import path, sys.path): importing a module runs the code at its top level.
    """
    from hardneg.pipeline.config import dump_yaml

    typer.echo(dump_yaml(_load(config, overrides)), nl=False)


@app.command()
def configs() -> None:
    """List the packaged configs usable as CONFIG."""
    from hardneg.pipeline.config import packaged_config_names

    for name in packaged_config_names():
        typer.echo(name)


app.add_typer(theory_app, name="theory", help="Theory: bounds, optimal K, collision probabilities.")
app.add_typer(data_app, name="data",
              help="Build data: a Wikipedia dump -> article-labelled sentences; SentEval task folders.")


def main() -> None:
    """Console-script entry point: every failure is one ``error: ...`` line (usage errors too, with
    the command's help hint), Ctrl-C outside a run exits 130."""
    # typer's (vendored) click classes, found through a public one: BadParameter < UsageError <
    # ClickException
    usage_error = cast("type[Exception]", typer.BadParameter.__mro__[1])
    click_exception = cast("type[Exception]", typer.BadParameter.__mro__[2])
    try:
        code = app(standalone_mode=False)
    except usage_error as err:
        message = err.format_message()  # type: ignore[attr-defined]
        if not message:  # no arguments at all: the help was printed
            raise SystemExit(2) from None
        _echo(f"error: {message}")
        ctx = getattr(err, "ctx", None)
        if ctx is not None:
            _echo(f"Try '{ctx.command_path} --help' for help.")
        raise SystemExit(2) from None
    except click_exception as err:
        _echo(f"error: {err.format_message()}")  # type: ignore[attr-defined]
        raise SystemExit(getattr(err, "exit_code", 1)) from None
    except (typer.Abort, KeyboardInterrupt):
        _echo("interrupted")
        raise SystemExit(130) from None
    raise SystemExit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()

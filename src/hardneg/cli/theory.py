# ruff: noqa: B008
"""``hardneg theory …`` — command-line access to the calculators, reports and figures.

Mount with ``main_app.add_typer(theory_app, name="theory")``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import typer

from hardneg.cli._options import HELP, describe, in_option_words

app = typer.Typer(
    rich_markup_mode=None,  # click's plain help: typer's rich panels print '<bool>' for flags
    context_settings=HELP,
    help="Theory you can run: collision probabilities, Arora/Ash/HCL bounds, worked examples, "
    "measured-vs-bound reports, figures.",
    no_args_is_help=True,
)


def _fail(exc: Exception) -> None:
    """One ``error:`` line naming the option (``--classes``, not the calculator's ``num_classes``)."""
    typer.echo(f"error: {in_option_words(describe(exc), app)}", err=True)
    raise typer.Exit(code=2)


@app.command("optimal-k")
def optimal_k(
    classes: int = typer.Option(..., "--classes", "-C", help="number of latent classes N"),
    ceil: bool = typer.Option(False, "--ceil", help="integer-copies (ceil) coefficient"),
) -> None:
    """Every K minimising Ash et al.'s Theorem 1 coefficient (N−1 and N tie exactly)."""
    from hardneg.theory.ash import CEIL_MAX_CLASSES, ash_coefficient, optimal_num_negatives

    if ceil and classes > CEIL_MAX_CLASSES:  # the integer-copies coefficient is searched K by K
        _fail(ValueError(f"invalid value for '--classes': at most {CEIL_MAX_CLASSES} with --ceil, "
                         f"got {classes}"))
        return
    try:
        ks = optimal_num_negatives(classes, ceil=ceil)
    except ValueError as exc:
        _fail(exc)
        return
    typer.echo(f"optimal K for N={classes}: {', '.join(map(str, ks))}")
    typer.echo(f"coefficient at optimum: {ash_coefficient(classes, ks[0], ceil=ceil):.6g}")


@app.command("collision")
def collision(
    classes: int = typer.Option(..., "--classes", "-C", help="number of classes C (uniform prior)"),
    negatives: int = typer.Option(..., "--negatives", "-K", help="number of negatives K"),
) -> None:
    """τ_K = 1 − (1−1/C)^K, 1−τ_K, τ′ = C^{−K}, and P(K+1 classes distinct)."""
    from hardneg.theory.collisions import (
        all_collide_probability,
        collision_probability,
        distinct_classes_probability,
        no_collision_probability,
    )

    try:
        tau = collision_probability(classes, negatives)
        rows = {
            "tau_K": tau,
            "1 - tau_K": no_collision_probability(classes, negatives),
            "tau_prime": all_collide_probability(classes, negatives),
            "P(K+1 distinct)": distinct_classes_probability(classes, negatives + 1),
            "expected collisions K/C": negatives / classes,
        }
    except ValueError as exc:
        _fail(exc)
        return
    for k, v in rows.items():
        typer.echo(f"{k:<26}{v:.6g}")


@app.command("ash-coefficient")
def ash_coefficient_cmd(
    classes: int = typer.Option(..., "--classes", "-C"),
    negatives: int = typer.Option(..., "--negatives", "-K"),
    ceil: bool = typer.Option(False, "--ceil"),
) -> None:
    """Ash et al. Theorem 1 coefficient 2·max(1, 2(N−1)H_{N−1}/K)/(1−τ_K) (reconstructed; see
    https://github.com/hardneg/hardneg/blob/main/docs/theory.md)."""
    from hardneg.theory.ash import ash_coefficient, collision_floor

    try:
        c = ash_coefficient(classes, negatives, ceil=ceil)
        typer.echo(f"coefficient                {c:.6g}")
        typer.echo(f"collision floor (hinge)    {collision_floor(classes, negatives):.6g}")
        typer.echo(
            f"collision floor (logistic) {collision_floor(classes, negatives, 'logistic'):.6g}"
        )
    except ValueError as exc:
        _fail(exc)


@app.command("arora-coefficients")
def arora_coefficients_cmd(
    negatives: int = typer.Option(1, "--negatives", "-K"),
    classes: int = typer.Option(..., "--classes", "-C"),
    loss: str = typer.Option("hinge", "--loss", help="hinge or logistic (base 2)"),
) -> None:
    """α, β (with c′), η of Arora et al. Theorem B.1 (Theorem 4.5 for K = 1)."""
    from hardneg.theory.arora import arora_coefficients

    try:
        co = arora_coefficients(negatives, classes, loss=loss)
    except ValueError as exc:
        _fail(exc)
        return
    for name in ("alpha", "beta", "eta", "tau", "tau_k", "tau_prime", "c_prime"):
        typer.echo(f"{name:<10}{getattr(co, name):.6g}")


@app.command("hcl-bound")
def hcl_bound(
    epsilon: float = typer.Option(..., "--epsilon"),
    classes: int = typer.Option(..., "--classes", "-C"),
    temperature: float = typer.Option(1.0, "--temperature", "-t"),
    xi: float | None = typer.Option(None, "--xi", help="separation ξ (default: simplex)"),
    dim: int | None = typer.Option(None, "--dim"),
) -> None:
    """HCL Theorem 5 misclassification bound (vacuous → reported as such)."""
    from hardneg.theory.hcl import hcl_misclassification_bound

    try:
        res = hcl_misclassification_bound(epsilon, classes, temperature, xi=xi, dim=dim)
    except ValueError as exc:
        _fail(exc)
        return
    typer.echo(f"xi        {res.xi:.6g}")
    typer.echo(f"margin    {res.margin:.6g}")
    typer.echo("bound     vacuous (inf)" if res.vacuous else f"bound     {res.value:.6g}")


@app.command("tammes")
def tammes(
    points: int = typer.Option(..., "--points", "-N"),
    dim: int = typer.Option(3, "--dim", "-d"),
    objective: str = typer.Option("weighted", "--objective", help="weighted (eq. 7) or maxmin"),
    restarts: int = typer.Option(8, "--restarts"),
    steps: int = typer.Option(600, "--steps"),
    seed: int = typer.Option(0, "--seed"),
) -> None:
    """Numerical (weighted) Tammes solver on the unit sphere."""
    from hardneg.theory.tammes import weighted_tammes

    try:
        res = weighted_tammes(points, dim, objective=objective, restarts=restarts, steps=steps,
                              seed=seed)
    except ValueError as exc:
        _fail(exc)
        return
    typer.echo(f"objective      {res.objective:.8g}")
    typer.echo(f"min distance   {res.min_distance:.8g}")
    typer.echo(f"min angle deg  {res.min_angle_deg:.6f}")


@app.command("crossings")
def crossings(
    r: float = typer.Option(..., "--r"),
    classes: int | None = typer.Option(None, "--classes", "-C", help="omit for N → ∞"),
) -> None:
    """Crossing points of L_NCE(f₁) = L_NCE(f₂) in Ash et al.'s §3 example (reconstructed; see
    https://github.com/hardneg/hardneg/blob/main/docs/theory.md)."""
    from hardneg.theory.examples import ash_example_crossings

    try:
        xs = ash_example_crossings(r, classes)
    except ValueError as exc:
        _fail(exc)
        return
    unit = "x = K/N" if classes is None else "K"
    typer.echo(f"f2 preferred for {unit} in ({', '.join(f'{x:.6g}' for x in xs)})")


@app.command("ot-value")
def ot_value(
    loss: str = typer.Option("nce", "--loss", help="nce or triplet"),
    q: float = typer.Option(1.0, "--q"),
    margin: float = typer.Option(0.0, "--margin"),
) -> None:
    """Degenerate min-max value ψ(0,…,0) of the HCL-OT paper (Theorem 1)."""
    from hardneg.theory.jiang import degenerate_minmax_value

    try:
        typer.echo(f"{degenerate_minmax_value(loss, q=q, margin=margin):.6g}")
    except ValueError as exc:
        _fail(exc)


@app.command("report")
def report(
    path: Path = typer.Argument(
        ..., help=".npz with features (n,d), labels (n,), or a folder holding features.npz (a run "
        "folder of `hardneg train`)"),
    negatives: int = typer.Option(5, "--negatives", "-K"),
    loss: str = typer.Option("hinge", "--loss"),
    block_size: int | None = typer.Option(None, "--block-size"),
    tuples: int = typer.Option(20_000, "--tuples"),
    prior: str = typer.Option("empirical", "--prior", help="empirical or uniform"),
    seed: int = typer.Option(0, "--seed"),
    json_out: Path | None = typer.Option(None, "--json", help="also write the dict here"),
    plain: bool = typer.Option(False, "--plain", help="plain text instead of rich tables"),
) -> None:
    """Measured vs bound table for saved features + labels (e.g. a run folder).

    Positive pairs are two distinct samples of one label (true pairs on latent-class data);
    negatives are drawn from all samples. See :mod:`hardneg.theory.measure`.
    """
    from hardneg.theory.measure import load_features, measure_bounds

    try:
        f, y = load_features(path)
        rep = measure_bounds(f, y, num_negatives=negatives, loss=loss, num_tuples=tuples,
                             block_size=block_size, prior=prior, seed=seed)
    except (ValueError, FileNotFoundError) as exc:
        _fail(exc)
        return
    if plain:
        typer.echo(rep.to_text())
    else:
        from rich.console import Console

        console = Console()
        for table in rep.to_rich_tables():
            console.print(table)
    if json_out is not None:
        from hardneg._io import atomic_write_text

        try:
            atomic_write_text(json_out, json.dumps(rep.to_dict(), indent=2, default=_json_default))
        except OSError as exc:
            _fail(OSError(exc.errno, exc.strerror, str(json_out)))
        typer.echo(f"wrote {json_out}")


def _json_default(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if hasattr(x, "item"):
        return x.item()  # numpy scalars
    raise TypeError(f"not JSON serialisable: {type(x)}")


@app.command("figures")
def figures(outdir: Path = typer.Argument(..., help="output folder")) -> None:
    """Write the Ash coefficient and f₁/f₂ crossing figures (PNG)."""
    from hardneg.figures.theory import write_all_figures

    try:
        written = write_all_figures(outdir)
    except OSError as exc:
        _fail(exc if exc.filename else OSError(exc.errno, exc.strerror, str(outdir)))
        return
    for p in written:
        typer.echo(f"wrote {p}")

"""``hardneg graphs …``: InfoGraph with hard, debiased and OT negatives from the command line.

::

    hardneg graphs compare [--data synthetic|tu|molecules] [--root DIR --name NAME]
                           [--methods infograph,hard:1,hard:2,hard:10,debiased:0.1,ot:1]
                           [--seeds 0,1,2] [--epochs 20] [--out runs/graphs_compare]
    hardneg graphs train   [same data options] [--method hard:1] [--seed 0] [--epochs 20]

The embedded default (``--data synthetic``) needs no files; ``--data tu --root DIR --name NAME``
reads a TU data set unpacked as ``DIR/NAME/NAME_A.txt``, …; ``--data molecules`` reads the
MoleculeACE ChEMBL sets (``--root`` a folder of their CSVs, or the installed package).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["app", "load_graph_data"]

app = typer.Typer(help="Graphs: InfoGraph with a controllable negative distribution.", no_args_is_help=True)

DataOpt = Annotated[str, typer.Option("--data", help="synthetic (embedded), tu, or molecules")]
RootOpt = Annotated[Path | None, typer.Option("--root", help="folder of the TU data set / MoleculeACE CSVs")]
NameOpt = Annotated[str | None, typer.Option("--name", help="TU data set name (e.g. MUTAG)")]
GraphsOpt = Annotated[int, typer.Option("--graphs", help="synthetic: number of graphs")]
EpochsOpt = Annotated[int, typer.Option("--epochs", help="training epochs (the final epoch is reported)")]
BatchOpt = Annotated[int, typer.Option("--batch-size", help="graphs per batch (HCL: 128)")]
ThreadsOpt = Annotated[int, typer.Option("--threads", help="torch threads")]
TaskOpt = Annotated[str, typer.Option("--task", help="molecules: targets (which target) or activity")]
AttrOpt = Annotated[bool, typer.Option("--node-attributes/--no-node-attributes",
                                        help="tu: use NAME_node_attributes.txt (the papers' runs did not)")]
MaxOpt = Annotated[int | None, typer.Option("--max-per-target", help="molecules: keep at most this many")]


def load_graph_data(
    data: str,
    *,
    root: Path | None,
    name: str | None,
    graphs: int = 600,
    seed: int = 0,
    task: str = "targets",
    max_per_target: int | None = None,
    node_attributes: bool = True,
) -> Any:
    """The data set of ``--data`` (a :class:`~hardneg.data.graphs.dataset.GraphDataset`)."""
    if data == "synthetic":
        from hardneg.data.graphs.synthetic import synthetic_motifs

        return synthetic_motifs(num_graphs=graphs, seed=seed)
    if data == "tu":
        if root is None or name is None:
            raise ValueError("--data tu needs --root DIR and --name NAME (files DIR/NAME/NAME_A.txt, ...)")
        from hardneg.data.graphs.tu import read_tu

        return read_tu(root, name, node_attributes=node_attributes)
    if data == "molecules":
        from hardneg.data.graphs.molecules import find_moleculeace, read_moleculeace

        where = root if root is not None else find_moleculeace()
        if where is None:
            raise ValueError(
                "--data molecules needs --root (a folder of MoleculeACE CSVs) or the MoleculeACE package "
                "installed (pip install --no-deps MoleculeACE==3.0.0)"
            )
        return read_moleculeace(where, task=task, max_per_target=max_per_target)
    raise ValueError(f"--data must be one of ['molecules', 'synthetic', 'tu'], got {data!r}")


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ValueError(f"{what} must be comma-separated integers, got {text!r}") from None


def _fail(err: BaseException) -> typer.Exit:
    typer.echo(f"error: {' '.join(str(err).split())}", err=True)
    return typer.Exit(code=2)


@app.command()
def compare(
    data: DataOpt = "synthetic",
    root: RootOpt = None,
    name: NameOpt = None,
    graphs: GraphsOpt = 600,
    task: TaskOpt = "targets",
    max_per_target: MaxOpt = None,
    node_attributes: AttrOpt = True,
    methods: Annotated[str, typer.Option("--methods", help="comma-separated method names")] = (
        "infograph,hard:1,hard:2,hard:10,debiased:0.1,ot:1"
    ),
    seeds: Annotated[str, typer.Option("--seeds", help="comma-separated training seeds")] = "0,1,2",
    epochs: EpochsOpt = 20,
    batch_size: BatchOpt = 128,
    out: Annotated[Path, typer.Option("--out", help="output folder (resumes the runs found there)")] = Path(
        "runs/graphs_compare"
    ),
    threads: ThreadsOpt = 2,
) -> None:
    """Compare negative distributions for InfoGraph over seeds (final epoch, SVM + logistic readouts)."""
    import torch

    from hardneg.graphs.experiment import run_graph_compare

    torch.set_num_threads(threads)
    try:
        dataset = load_graph_data(data, root=root, name=name, graphs=graphs, task=task,
                                  max_per_target=max_per_target, node_attributes=node_attributes)
        result = run_graph_compare(
            dataset, methods=[m.strip() for m in methods.split(",") if m.strip()],
            seeds=_ints(seeds, "--seeds"), out=out, epochs=epochs, batch_size=batch_size,
            log=lambda msg: typer.echo(msg, err=True),
        )
    except (ValueError, OSError) as err:
        raise _fail(err) from None
    typer.echo((result.out / "summary.md").read_text(), nl=False)


@app.command()
def train(
    data: DataOpt = "synthetic",
    root: RootOpt = None,
    name: NameOpt = None,
    graphs: GraphsOpt = 600,
    task: TaskOpt = "targets",
    max_per_target: MaxOpt = None,
    node_attributes: AttrOpt = True,
    method: Annotated[str, typer.Option("--method", help="infograph, hard:β, debiased:τ⁺, ot:ε")] = "hard:1",
    seed: Annotated[int, typer.Option("--seed")] = 0,
    epochs: EpochsOpt = 20,
    batch_size: BatchOpt = 128,
    threads: ThreadsOpt = 2,
) -> None:
    """Train one method and print its final-epoch SVM accuracy (10-fold CV)."""
    import torch

    from hardneg.evaluate.svm_cv import cross_validated_accuracy
    from hardneg.graphs.methods import parse_method
    from hardneg.graphs.train import train_infograph

    torch.set_num_threads(threads)
    try:
        dataset = load_graph_data(data, root=root, name=name, graphs=graphs, task=task,
                                  max_per_target=max_per_target, node_attributes=node_attributes)
        loss = parse_method(method).build()
        res = train_infograph(dataset, loss=loss, epochs=epochs, batch_size=batch_size, seed=seed)
        cv = cross_validated_accuracy(res.embeddings, dataset.labels, seed=seed)
    except (ValueError, OSError) as err:
        raise _fail(err) from None
    last = res.history[-1] if res.history else {}
    print(f"{dataset.name}: {len(dataset)} graphs, {dataset.num_classes} classes; {method}, seed {seed}, "
          f"{epochs} epochs, final loss {last.get('loss', float('nan')):.4f}", file=sys.stderr)
    typer.echo(f"SVM accuracy (final epoch): {cv}")

"""A CSV logger whose file survives ``--resume``.

Lightning's ``CSVLogger`` deletes an existing ``metrics.csv`` when its writer starts, so after a
resume the file would hold only the rows logged after it. :class:`ResumableCSVLogger` keeps the
rows of the epochs the resumed checkpoint already covers (``epoch <= keep_until_epoch``) and drops
the later ones, which the resumed run logs again.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.logger import rank_zero_experiment

from hardneg._io import atomic_write_text

__all__ = ["ResumableCSVLogger"]


class _KeepingWriter(ExperimentWriter):
    def __init__(self, log_dir: str, *, keep_until_epoch: int | None) -> None:
        self._keep_until_epoch = keep_until_epoch
        super().__init__(log_dir=log_dir)

    def _check_log_dir_exists(self) -> None:
        if self._keep_until_epoch is None or not self._fs.isfile(self.metrics_file_path):
            super()._check_log_dir_exists()
            return
        with self._fs.open(self.metrics_file_path, "r", newline="") as file:
            reader = csv.DictReader(file)
            keys = list(reader.fieldnames or [])
            rows = [row for row in reader if _epoch(row) <= self._keep_until_epoch]
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(self.metrics_file_path, buf.getvalue())
        self.metrics_keys = sorted(keys)


def _epoch(row: dict[str, Any]) -> float:
    try:
        return float(row.get("epoch") or 0.0)
    except ValueError:
        return 0.0


class ResumableCSVLogger(CSVLogger):
    """``CSVLogger`` that, given ``keep_until_epoch``, continues the existing ``metrics.csv``."""

    def __init__(self, *args: Any, keep_until_epoch: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._keep_until_epoch = keep_until_epoch

    @property
    @rank_zero_experiment
    def experiment(self) -> ExperimentWriter:
        if not isinstance(self._experiment, ExperimentWriter):
            self._fs.makedirs(self.root_dir, exist_ok=True)
            self._experiment = _KeepingWriter(log_dir=self.log_dir, keep_until_epoch=self._keep_until_epoch)
        return self._experiment

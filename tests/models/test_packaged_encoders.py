"""Every packaged config builds the same encoder as before the ``model`` section depended on
``model.encoder`` (issue 36, item 2): the same class, parameter shapes and seeded forward output.

``BEFORE`` was recorded at commit 8b4a4f9 (the flat ``ModelConfig`` and its key table), by building
each config's encoder through its modality with the stub inputs below: (class, number of parameters,
sha256[:16] of the ``name:shape`` lines of its parameters, the float64 sum of its seeded forward
outputs in eval mode). A mapping of a key to the wrong constructor argument changes the shapes
(``width``, ``feature_dim``, ``layers``) or the forward (``stem_stride``, ``bidirectional``).
"""

from __future__ import annotations

import hashlib
import json
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from hardneg.modalities import get_modality
from hardneg.pipeline.config import load_config, packaged_config_names

BEFORE: dict[str, tuple[str, int, str, float]] = {
    "articles": ("Encoder", 5000, "5dd1d2c2e2b70cd0", 29.383688),
    "digits": ("Encoder", 142624, "2ecfc4f7d45b8573", 4.499284),
    "digits_compare": ("Encoder", 40112, "5c2c671df0b46d6a", 2.698835),
    "fashion_mnist": ("Encoder", 142624, "2ecfc4f7d45b8573", 3.421237),
    "graphs": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "graphs_compare": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "latent_classes": ("Encoder", 12736, "db738aa6a6b17227", 2.234929),
    "mnist": ("Encoder", 142624, "2ecfc4f7d45b8573", 3.421237),
    "paper/cifar100_hard": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_beta_sweep": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_compare": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_debiased": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_hard": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_hard_b512": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_moco_hard": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/cifar10_simclr": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/graphs_tu_DD": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_ENZYMES": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_IMDB-BINARY": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_IMDB-MULTI": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_MUTAG": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_PROTEINS": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_PTC_MR": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/graphs_tu_REDDIT-BINARY": ("InfoGraphModel", 80224, "7804a2137d0bbb22", 138.294838),
    "paper/quickthoughts_bookcorpus": ("QuickThoughts", 10844400, "650286ea2754b237", 21.084505),
    "paper/stl10_hard": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/stl10_hard_anneal": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/tinyimagenet_hard": ("Encoder", 24615616, "325101f2d7a96d83", 2296.428807),
    "paper/wiki3029": ("Encoder", 15000, "5dda57dee5b2f8d4", -13.400278),
    "sentences": ("QuickThoughts", 10000, "dfd9707a9240a2bc", 19.722407),
    "sentences_compare": ("QuickThoughts", 10000, "dfd9707a9240a2bc", 19.722407),
    "studies/fmnist_beta": ("Encoder", 142624, "2ecfc4f7d45b8573", 3.421237),
    "studies/fmnist_compare": ("Encoder", 142624, "2ecfc4f7d45b8573", 3.421237),
    "studies/k_articles": ("Encoder", 5000, "5dd1d2c2e2b70cd0", 29.383688),
    "studies/k_digits": ("Encoder", 40112, "5c2c671df0b46d6a", 2.698835),
    "studies/table1_articles": ("Encoder", 5000, "5dd1d2c2e2b70cd0", 29.383688),
    "studies/table2_blocks": ("Encoder", 5000, "5dd1d2c2e2b70cd0", 29.383688),
    "studies/target_ess_digits": ("Encoder", 40112, "5c2c671df0b46d6a", 2.698835),
    "studies/tau_plus_digits": ("Encoder", 40112, "5c2c671df0b46d6a", 2.698835),
    "studies/tau_plus_latent": ("Encoder", 12736, "db738aa6a6b17227", 2.234929),
    "theory_arora_block": ("Encoder", 2720, "55b24ebdaca92ce7", -0.243165),
    "theory_ash_tradeoff": ("Encoder", 2720, "55b24ebdaca92ce7", -0.243165),
    "theory_hcl_beta": ("Encoder", 2720, "55b24ebdaca92ce7", -0.243165),
}

_IMAGES = {"digits": 1, "mnist": 1, "fashion_mnist": 1, "cifar10": 3, "cifar100": 3, "stl10": 3,
           "tiny_imagenet": 3}


def _stub(cfg: Any) -> tuple[SimpleNamespace, Any, str]:
    """A training split with only what ``build_encoder`` reads, a seeded input, and their signature."""
    d = cfg.data
    g = torch.Generator().manual_seed(1)
    if d.dataset in _IMAGES:
        c = _IMAGES[d.dataset]
        x = torch.rand(2, c, 8, 8, generator=g)
        return SimpleNamespace(images=torch.zeros(1, c, 1, 1)), x, f"image{c}"
    if d.dataset == "latent":
        dim = d.latent.input_dim if d.latent.kind == "gaussian" else d.latent.vocab_size
        return SimpleNamespace(inputs=torch.zeros(1, dim)), torch.rand(4, dim, generator=g), f"vector{dim}"
    if d.dataset in ("motifs", "tu", "molecules"):
        from torch_geometric.data import Batch, Data

        edges = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
        graphs = [Data(x=torch.rand(n, 7, generator=g), edge_index=edges) for n in (3, 4)]
        return SimpleNamespace(num_features=7), Batch.from_data_list(graphs), "graph7"
    tokens = torch.tensor([[2, 3, 4, 0], [5, 6, 0, 0]])
    train = SimpleNamespace(vocab=list(range(50)), labels=torch.tensor([0, 1, 2]))
    return train, tokens, f"text{getattr(getattr(d, 'text', None), 'supervised', None)}"


_BUILT: dict[tuple[str, str, int, str], tuple[str, int, str, float]] = {}


def _fingerprint(cfg: Any) -> tuple[str, int, str, float]:
    """Built once per distinct (modality, model section, seed, inputs): configs that agree on all
    four call the same constructor."""
    modality = get_modality(cfg.data.dataset)
    train, x, signature = _stub(cfg)
    key = (modality.name, json.dumps(cfg.model.model_dump(), sort_keys=True), cfg.seed, signature)
    if key in _BUILT:
        return _BUILT[key]
    torch.manual_seed(cfg.seed)
    encoder = modality.build_encoder(cfg, train)
    shapes = "\n".join(f"{n}:{tuple(p.shape)}" for n, p in encoder.named_parameters())
    encoder.eval()
    with torch.no_grad():
        out = encoder.embed(x) if hasattr(encoder, "embed") else encoder(x)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum(float(o.double().sum()) for o in outs if o.is_floating_point())
    params = sum(p.numel() for p in encoder.parameters())
    _BUILT[key] = (type(encoder).__name__, params, hashlib.sha256(shapes.encode()).hexdigest()[:16], total)
    return _BUILT[key]


def test_the_table_covers_every_packaged_config() -> None:
    assert sorted(BEFORE) == packaged_config_names()


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_a_packaged_config_builds_the_encoder_it_built_before(name: str) -> None:
    cls, params, shapes, total = _fingerprint(load_config(name))
    want = BEFORE[name]
    assert (cls, params, shapes) == want[:3]
    assert total == pytest.approx(want[3], rel=1e-4, abs=1e-4)

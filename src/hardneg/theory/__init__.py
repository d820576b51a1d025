"""hardneg.theory — the theory of contrastive learning with negatives, as code you can run.

Calculators for Arora et al. (ICML'19), Ash et al. (AISTATS'22), Robinson et al. (HCL,
ICLR'21) and Jiang–Ishwar–Aeron (HCL-OT); measured-vs-bound reports. Formulas, sources and
reconstruction flags: docs/theory.md (every docstring names the paper and theorem/equation and
marks (reconstructed; see docs/theory.md) where reconstructed).
This package never imports the training pipeline. The latent-class simulator is
:mod:`hardneg.data.latent`, the figures :mod:`hardneg.figures.theory`; the controlled experiments
(Ash et al.'s K trade-off, Arora et al.'s block size, HCL's β with true positives) are packaged
sweeps on the latent-class modality: ``hardneg sweep theory_ash_tradeoff`` (``theory_arora_block``,
``theory_hcl_beta``).

Names are imported on first use (the calculators pull in SciPy), so ``hardneg theory --help``
answers without loading them.
"""

from __future__ import annotations

from hardneg._lazy import lazy_names

_WHERE = {
    "AroraCoefficients": ".arora",
    "AshTheorem3Bound": ".ash",
    "C_PRIME_HINGE": ".arora",
    "C_PRIME_LOGISTIC": ".arora",
    "F2_CLOSED_FORM_MAX_R": ".examples",
    "HCLBound": ".hcl",
    "TammesResult": ".tammes",
    "all_collide_probability": ".collisions",
    "arora_coefficients": ".arora",
    "arora_example_embeddings": ".examples",
    "arora_example_nce": ".examples",
    "arora_lemma_4_3_bound": ".arora",
    "arora_proposition_6_2_bound": ".arora",
    "arora_theorem_4_5_bound": ".arora",
    "arora_theorem_b1_bound": ".arora",
    "ash_coefficient": ".ash",
    "ash_example_crossings": ".examples",
    "ash_example_embeddings": ".examples",
    "ash_example_preferred_f2": ".examples",
    "ash_f1_nce": ".examples",
    "ash_f2_crude_bounds": ".examples",
    "ash_f2_nce": ".examples",
    "ash_theorem1_bound": ".ash",
    "ash_theorem3_bound": ".ash",
    "c_prime": ".arora",
    "collision_count_pmf": ".collisions",
    "collision_floor": ".ash",
    "collision_probability": ".collisions",
    "competitive_gamma": ".arora",
    "coupon_cover_probability": ".coupon",
    "coupon_expected_draws": ".coupon",
    "coupon_expected_draws_bound": ".coupon",
    "degenerate_minmax_value": ".jiang",
    "distinct_classes_probability": ".collisions",
    "exact_hinge_nce": ".examples",
    "generalization_gap": ".arora",
    "harmonic_number": ".coupon",
    "hcl_misclassification_bound": ".hcl",
    "intraclass_deviation": ".deviation",
    "kappa_loose": ".ash",
    "kappa_tau_refined": ".ash",
    "loss_upper_bound": ".arora",
    "no_all_collide_probability": ".collisions",
    "no_collision_probability": ".collisions",
    "optimal_num_negatives": ".ash",
    "simplex_separation": ".hcl",
    "weighted_tammes": ".tammes",
}

__all__ = [
    "C_PRIME_HINGE",
    "C_PRIME_LOGISTIC",
    "F2_CLOSED_FORM_MAX_R",
    "AroraCoefficients",
    "AshTheorem3Bound",
    "HCLBound",
    "TammesResult",
    "all_collide_probability",
    "arora_coefficients",
    "arora_example_embeddings",
    "arora_example_nce",
    "arora_lemma_4_3_bound",
    "arora_proposition_6_2_bound",
    "arora_theorem_4_5_bound",
    "arora_theorem_b1_bound",
    "ash_coefficient",
    "ash_example_crossings",
    "ash_example_embeddings",
    "ash_example_preferred_f2",
    "ash_f1_nce",
    "ash_f2_crude_bounds",
    "ash_f2_nce",
    "ash_theorem1_bound",
    "ash_theorem3_bound",
    "c_prime",
    "collision_count_pmf",
    "collision_floor",
    "collision_probability",
    "competitive_gamma",
    "coupon_cover_probability",
    "coupon_expected_draws",
    "coupon_expected_draws_bound",
    "degenerate_minmax_value",
    "distinct_classes_probability",
    "exact_hinge_nce",
    "generalization_gap",
    "harmonic_number",
    "hcl_misclassification_bound",
    "intraclass_deviation",
    "kappa_loose",
    "kappa_tau_refined",
    "loss_upper_bound",
    "no_all_collide_probability",
    "no_collision_probability",
    "optimal_num_negatives",
    "simplex_separation",
    "weighted_tammes",
]


__getattr__, __dir__ = lazy_names(globals(), _WHERE)

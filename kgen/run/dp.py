"""(epsilon, delta)-differential privacy by SafePub in the run: what it refuses, the random sample of the rows,
and its search (docs/privacy-models.md, "Differential privacy").

The model (`fitness.privacy.dp`) derives beta and k; the walk is `lattice.search.safepub`. Here: the
settings that would break the guarantee are refused in one line each; the input's rows are sampled with
probability beta from the run's seed (numpy's generator on its own stream, never global random state), so
that the same seed gives the same sample, byte for byte, whatever the workers; the search is built with the
model's budget, steps and score function.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from fitness.models import PrivacyModel
from fitness.privacy import FAMILIES
from fitness.privacy.dp import FAMILY, DifferentialPrivacy, score_function, steps_for
from kgen.io.table import CodedColumn, Table
from lattice.errors import InputError
from lattice.search.safepub import SafePub, rng_for

SAMPLE_STREAM = 1  # the sample's numpy stream: SeedSequence([seed, 1]) (the walk draws from [seed, 2])
ALLOWED_ALGORITHMS = ("safepub", "auto", "kgen")  # "auto" is the default algorithm (and "kgen" was): with DP
# either means SafePub's walk
ALLOWED_FAMILIES = ("k-anonymity", "differential-privacy")


def asked(settings: object) -> bool:
    """Whether the run asks for differential privacy."""
    return getattr(settings, "differential_privacy", None) is not None


def check_settings(settings: object) -> None:
    """Refuse, in one line, what SafePub's guarantee does not cover, or an algorithm that is not its walk.
    Stricter than ARX, which refuses research subsets and microaggregation with DP but accepts other models:
    a model that suppresses more classes by their contents is outside the paper's proof. Called by
    `Config.check`."""
    s = settings
    if not asked(s):
        if getattr(s, "algorithm", None) == "safepub":
            raise InputError("--algorithm safepub is differential privacy's search: give --differential-privacy "
                             "EPS,DELTA")
        return
    if s.algorithm not in ALLOWED_ALGORITHMS:  # type: ignore[attr-defined]
        raise InputError(f"--differential-privacy chooses its node with its own randomized search (safepub); "
                         f"--algorithm {s.algorithm} would choose it without spending the search's budget")  # type: ignore[attr-defined]
    values = s.model_values()  # type: ignore[attr-defined]
    others = [f.name for f in FAMILIES.values() if f.asked(values) and f.name not in ALLOWED_FAMILIES]
    if others:
        raise InputError(f"--differential-privacy cannot be combined with {others[0]}: SafePub's proof covers "
                         "sampling, generalization and the suppression of classes below its k, nothing else")
    refused = [(s.partitioned, "--partitioned (row parts count classes of all rows, not of the sample)"),  # type: ignore[attr-defined]
               (s.node is not None, "--node (the node must be drawn by the search, which spends its budget)"),  # type: ignore[attr-defined]
               (s.local_recoding or bool(s.microaggregate),  # type: ignore[attr-defined]
                "--local-recoding or --microaggregate (not covered by the guarantee; ARX refuses them)"),
               (s.time_limit is not None, "--time-limit (the release would depend on the machine's speed)"),  # type: ignore[attr-defined]
               (s.suppression not in (0.0, 1.0),  # type: ignore[attr-defined]
                "--suppression (every class below the derived k is suppressed, whatever their rows: the limit is 1)")]
    for bad, what in refused:
        if bad:
            raise InputError(f"--differential-privacy cannot be combined with {what}")


def model_of(models: Sequence[PrivacyModel]) -> DifferentialPrivacy | None:
    """The run's differential-privacy model, if any."""
    return next((m for m in models if isinstance(m, DifferentialPrivacy)), None)


def for_run(table: Table, config: object, models: list[PrivacyModel]) -> tuple[Table, list[PrivacyModel], object]:
    """What `prepare` runs on: with a DP model, the random sample (`sample`), the models with its rows filled in
    and the config with the suppression limit 1 (SafePub suppresses every class below k, whatever their rows);
    without one, all three as they are. A DP model given as an object (`anonymize(..., models=...)`) meets the
    same refusals as one asked for by the config."""
    model = model_of(models)
    if model is None:
        return table, models, config
    others = [m.name for m in models if m.name not in ALLOWED_FAMILIES]
    if others:
        raise InputError(f"--differential-privacy cannot be combined with {others[0]}: SafePub's proof covers "
                         "sampling, generalization and the suppression of classes below its k, nothing else")
    if not asked(config):
        check_settings(dataclasses.replace(config, differential_privacy=model.params["differential_privacy"]))  # type: ignore[type-var]
    steps = config.dp_steps if asked(config) else model.steps  # type: ignore[attr-defined]
    table, models = sample(table, models, config.seed, len(config.qi), steps)  # type: ignore[attr-defined]
    return table, models, dataclasses.replace(config, suppression=1.0)  # type: ignore[type-var]


def sample(table: Table, models: list[PrivacyModel], seed: int, qis: int, steps: object
           ) -> tuple[Table, list[PrivacyModel]]:
    """The rows SafePub releases from: each row kept with probability beta, independently, drawn from the
    seed's own stream; and the models with the DP model's rows and steps filled in. Without a DP model, the
    table and models as they are."""
    model = model_of(models)
    if model is None:
        return table, models
    keep = rng_for(seed, SAMPLE_STREAM).random(table.n) < model.beta
    if not keep.any():
        raise InputError(f"the random sample (beta = {model.beta:.4f}) kept no row of {table.n}: nothing to "
                         "release; a larger epsilon keeps more rows", file=table.source)
    index = np.flatnonzero(keep)
    values = {c: subset(table.values[c], index) for c in table.columns}
    numbers = [table.row_number(int(i)) for i in index]
    sampled = Table(table.columns, values, table.source, table.separator, numbers)
    filled = dataclasses.replace(model, input_rows=table.n, sampled_rows=int(index.size),
                                 steps=steps_for(steps, qis))
    return sampled, [filled if m is model else m for m in models]


def subset(column: Sequence[str], index: np.ndarray) -> Sequence[str]:
    """The column's rows at `index`, coded columns staying coded."""
    if isinstance(column, CodedColumn):
        return CodedColumn(column.codes[index], column.labels)
    return [column[int(i)] for i in index]


def search_for(models: Sequence[PrivacyModel], heights: Sequence[int]) -> SafePub | None:
    """SafePub's walk for the run's DP model (None without one), its score scaled to the model's k and rows."""
    model = model_of(models)
    if model is None:
        return None
    score = score_function(model.score, model.derived_k, int(model.input_rows or 0), int(model.sampled_rows or 0),
                           heights)
    return SafePub(model.steps, model.epsilon_search, score)


def refuse_apply(report: Mapping, source: str) -> None:
    """`kgen apply` refuses a differential-privacy report: the guarantee comes from a fresh random sample and
    a node drawn on the data itself; the saved node applied to other rows would spend no budget for them and
    draw no sample, which is not differentially private. Run `kgen anonymize --differential-privacy` on the
    new data instead (a new budget)."""
    saved = report.get("models")
    if isinstance(saved, list) and any(isinstance(m, Mapping) and m.get("model") == FAMILY.name for m in saved):
        raise InputError("kgen apply does not apply a differential-privacy report: the release's guarantee comes "
                         "from its random sample and the node drawn on that data; run kgen anonymize "
                         "--differential-privacy on the new data (it spends a new budget)", file=source)

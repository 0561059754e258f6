"""Reproduce the KGen paper's evaluation (RQ1-RQ3, figures 7-10) and a GA convergence plot.

    python -m experiments.paper --quick        # every CSV and PNG of results/ (about 5 minutes on 2 cores)
    python -m experiments.paper                # full mode (hours; see results/README.md)
    python -m experiments.plots                # redraw the PNGs from the CSVs only

Per dataset, for q = 2, 3, ... (the first q attributes as QIs, k = 2, suppression limit 0.005): the exact
searches once (exhaustive, OLA, kgen's best-first and the certified search; they are deterministic; other
registered searches join by name, see OPTIONAL_METHODS), KGen (the paper's preset and the kgen+ preset) and
random search with 10 seeds each. The certified search keeps running after a time-out (its proven interval
[lower bound, found] is the point), and the first seed of each KGen preset gets the lower bound its own
infeasible evaluations prove (figure 11, the certified interval per q). Every run has the same wall-clock
limit; a run that hits it is a missing point, written to the CSV with `timed_out = True`, and an exact method
is not started again at a larger q after it timed out or refused the lattice's size (`stopped = skipped`).
Accuracy and the LOG gap are measured against the optimum of the exact runs that completed at that q; accuracy
needs every k-minimal node, so only exhaustive search and OLA provide it (best-first proves the optimal LOG
only).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from experiments import plots, summary
from experiments.common import (
    LOADERS,
    RESULTS,
    Method,
    Plan,
    environment,
    find_optimum,
    load_average,
    run_plan,
    run_search,
)
from kgen.io.files import write_atomic
from kgen.run.algorithms import REGISTRY
from kgen.run.prepare import prepare


@dataclass(frozen=True)
class Mode:
    """The knobs that differ between quick and full mode."""

    name: str
    time_limit: float
    seeds: int
    evaluations: int
    qs: dict[str, tuple[int, ...]]
    exact_qs: dict[str, tuple[int, ...]]
    convergence_evaluations: int


QUICK = Mode(
    name="quick", time_limit=10.0, seeds=10, evaluations=1000,
    qs={"cargo2000": (2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 25, 50, 97),
        "fraud": tuple(range(2, 16)), "adult": tuple(range(2, 10))},
    exact_qs={"cargo2000": tuple(range(2, 26)), "fraud": tuple(range(2, 16)), "adult": tuple(range(2, 10))},
    convergence_evaluations=5000,
)
FULL = Mode(
    name="full", time_limit=900.0, seeds=10, evaluations=5000,
    qs={"cargo2000": (*range(2, 26), 50, 97), "fraud": tuple(range(2, 16)), "adult": tuple(range(2, 10))},
    exact_qs={"cargo2000": tuple(range(2, 26)), "fraud": tuple(range(2, 16)), "adult": tuple(range(2, 10))},
    convergence_evaluations=5000,
)
BASE_METHODS = ("exhaustive", "ola", "bestfirst", "certify", "kgen", "kgen+", "memetic", "random")
# The classic searches join the figures by name; what each guarantees (`exact`, `all_minimal`) is the search
# class's own declaration (lattice.search.base.Search), read from kgen.run.algorithms.REGISTRY.
OPTIONAL_METHODS = ("incognito", "samarati", "datafly")
METHODS = BASE_METHODS + OPTIONAL_METHODS
CONVERGENCE = ("cargo2000", 25, 0)  # dataset, q, seed of the convergence runs


def default_methods() -> tuple[str, ...]:
    """Every method of the figures whose algorithm the registry offers now (new registrations join by name)."""
    return tuple(name for name in METHODS if catalogue_algorithm(name) in REGISTRY)


GA_PRESETS = ("kgen+", "memetic")  # labels that are presets of the registry's `kgen`


def catalogue_algorithm(label: str) -> str:
    return "kgen" if label in GA_PRESETS else label


def methods_for(mode: Mode, dataset: str, wanted: Sequence[str], log=print) -> tuple[Method, ...]:
    """The methods of the figures that the registry offers (a missing one is reported, not faked).

    The certified search is exact when it completes and keeps running at larger q after a time-out (its
    interval [bound, found] is the point there); the first seed of each stochastic method also gets the
    certified bound its own infeasible evaluations prove (the certified-interval figure)."""
    seeds = tuple(range(mode.seeds))
    catalogue = {
        "exhaustive": Method("exhaustive", "exhaustive", exact=True, qs=mode.exact_qs[dataset], all_minimal=True),
        "ola": Method("ola", "ola", exact=True, qs=mode.exact_qs[dataset], all_minimal=True),
        "bestfirst": Method("bestfirst", "bestfirst", exact=True, qs=mode.exact_qs[dataset]),
        "certify": Method("certify", "certify", exact=True, keep_after_timeout=True),
        "kgen": Method("kgen", "kgen", {"preset": "paper"}, seeds, mode.evaluations, bound_seeds=1),
        "kgen+": Method("kgen+", "kgen", {"preset": "kgen+"}, seeds, mode.evaluations, bound_seeds=1),
        "memetic": Method("memetic", "kgen", {"preset": "memetic"}, seeds, mode.evaluations, bound_seeds=1),
        "random": Method("random", "random", {}, seeds, mode.evaluations),
    }
    for name in OPTIONAL_METHODS:
        if name in REGISTRY:
            search = REGISTRY[name]
            catalogue[name] = (Method(name, name, exact=True, qs=mode.exact_qs[dataset], all_minimal=search.all_minimal)
                               if search.exact else Method(name, name, {}, (0,), None, bound_seeds=1))
    chosen = []
    for label in wanted:
        method = catalogue.get(label)
        if method is None or method.algorithm not in REGISTRY:
            log(f"warning: algorithm {catalogue_algorithm(label)!r} is not in kgen.run.algorithms.REGISTRY; "
                f"{label} is left out")
            continue
        chosen.append(method)
    return tuple(chosen)


def run_convergence(mode: Mode, out: Path, wanted: Sequence[str], log=print) -> None:
    """One GA run per KGen preset on Cargo 2000 (q = 25, seed 0): best LOG and feasible fraction per
    generation, from SearchResult.trace, written to convergence.csv."""
    name, q, seed = CONVERGENCE
    dataset = LOADERS[name]()
    prepared = prepare(dataset.table, dataset.config(q))
    methods = [m for m in methods_for(mode, name, wanted, log) if m.algorithm == "kgen"]
    exact = [m for m in methods_for(mode, name, wanted, log) if m.exact]
    optimum = None
    if prepared.box.size <= 200_000:  # small enough to know the optimum
        optimum = find_optimum([(m, run_search(prepared, m, 0, mode.time_limit)) for m in exact])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["run", "algorithm", "generation", "evaluations", "best_log", "feasible_fraction", "seconds",
                     "optimum_log", "meta"])
    for method in methods:
        limited = Method(method.label, method.algorithm, method.options, (seed,), mode.convergence_evaluations)
        result = run_search(prepared, limited, seed, mode.time_limit)
        meta = json.dumps({"dataset": name, "q": q, "seed": seed, "max_evaluations": mode.convergence_evaluations,
                           "stopped": result.stopped, "seconds": round(result.seconds, 3)})
        run = f"{method.label} ({method.options.get('preset', '')} preset)"
        for point in result.trace:
            best = point.get("best_loss")
            writer.writerow([run, method.label, point["generation"], point["evaluations"],
                             "" if best is None else f"{best:.10g}", f"{point['feasible_fraction']:.6g}",
                             f"{point['seconds']:.5g}", "" if optimum is None else f"{optimum.log:.10g}", meta])
        log(f"convergence {run}: {len(result.trace)} generations, {result.evaluations} evaluations, "
            f"best LOG {'none' if result.best is None else f'{result.best.log:.4f}'}, {result.seconds:.1f}s")
    write_atomic(out / "convergence.csv", buffer.getvalue())


def run_dataset(name: str, mode: Mode, wanted: Sequence[str], out: Path, convergence: bool) -> None:
    """Every run of one dataset into out/<name>.csv (and the convergence runs if asked): one worker's job."""
    def log(line: str) -> None:
        print(line, flush=True)

    dataset = LOADERS[name]()
    plan = Plan(name, mode.qs[name], methods_for(mode, name, wanted, log), mode.time_limit)
    run_plan(plan, dataset, out / f"{name}.csv", log=log)
    if convergence:
        run_convergence(mode, out, wanted, log=log)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.paper", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the quick mode (under 10 minutes, fewer q and "
                        "evaluations); default: the full mode")
    parser.add_argument("--datasets", default="cargo2000,fraud,adult",
                        help="comma-separated, from: " + ", ".join(LOADERS))
    parser.add_argument("--methods", default=",".join(default_methods()),
                        help="comma-separated, from: " + ", ".join(METHODS) + " (default: those registered)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="output folder (default: results/)")
    parser.add_argument("--time-limit", type=float, help="seconds per run (overrides the mode's)")
    parser.add_argument("--seeds", type=int, help="seeds per stochastic method (overrides the mode's)")
    parser.add_argument("--evaluations", type=int, help="max evaluations of KGen and random (overrides)")
    parser.add_argument("--qs", help="comma-separated numbers of QIs to run (overrides the mode's, every dataset)")
    parser.add_argument("--jobs", type=int, default=2, help="datasets run side by side in worker processes "
                        "(default 2, the machine's cores; 1: one after the other in this process)")
    parser.add_argument("--no-convergence", action="store_true", help="skip the convergence runs")
    args = parser.parse_args(argv)
    mode = QUICK if args.quick else FULL
    overrides = {"time_limit": args.time_limit, "seeds": args.seeds, "evaluations": args.evaluations}
    if args.qs:
        qs = tuple(int(q) for q in args.qs.split(","))
        overrides.update(qs={n: qs for n in LOADERS}, exact_qs={n: qs for n in LOADERS})
    mode = Mode(**{**mode.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    wanted = [m.strip() for m in args.methods.split(",") if m.strip()]
    for bad in [n for n in names if n not in LOADERS] + [m for m in wanted if m not in METHODS]:
        parser.error(f"unknown dataset or method {bad!r}")
    args.out.mkdir(parents=True, exist_ok=True)
    start, load_at_start = time.perf_counter(), load_average()
    code_at_start = environment(mode.name)["uncommitted_code"]  # the modules are loaded now, not at the end
    convergence = not args.no_convergence and "cargo2000" in names
    jobs = max(1, min(args.jobs, len(names)))
    if jobs == 1:
        for name in names:
            run_dataset(name, mode, wanted, args.out, convergence and name == "cargo2000")
    else:
        # one dataset per worker process (each run stays single-threaded); Cargo, the longest, goes first
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(run_dataset, name, mode, wanted, args.out, convergence and name == "cargo2000")
                       for name in names]
            for future in futures:
                future.result()
    for path in plots.draw_all(args.out):
        print(f"wrote {path}")
    write_atomic(args.out / "summary.md", summary.summary(args.out))
    info = environment(mode.name, round(time.perf_counter() - start, 1))
    info.update(uncommitted_code=code_at_start, load_average_start=load_at_start, time_limit=mode.time_limit,
                seeds=mode.seeds, evaluations=mode.evaluations, datasets=names, methods=wanted)
    write_atomic(args.out / "environment.json", json.dumps(info, indent=2) + "\n")
    print(f"done in {info['wall_seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

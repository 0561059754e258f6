"""The mutation table of benchmarks/mutation.py: one single-point change per entry, applied alone.

file: the changed file; original: a snippet found exactly once in it; mutated: its replacement; tests: the test
files run against the mutant; planted: one of issue 25's planted bugs; equivalent: for a survivor, why no test
can catch it (it behaves as the original).
"""

from __future__ import annotations

CHECKERS = ["tests/test_checker_near_miss.py"]
KEYS = ["tests/test_keys_at_word_boundary.py"]

MUTANTS: list[dict] = [
    # --- issue 25: planted bugs the suite let through ------------------------------------------------------------
    dict(
        id='mondrian-check-k-minus-1',
        file='kgen/check_mondrian.py',
        original='small = sizes[classes] < k\n',
        mutated='small = sizes[classes] < k - 1\n',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='mondrian-check-l-minus-1',
        file='kgen/check_mondrian.py',
        original='few = distinct[classes] < l\n',
        mutated='few = distinct[classes] < l - 1\n',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='mondrian-check-any-prefix',
        file='kgen/check_mondrian.py',
        original='ok |= starts & (np.char.str_len(text.astype(str)) <= lengths[inverse])',
        mutated='ok |= np.char.str_len(text.astype(str)) <= lengths[inverse]',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='partitioned-check-one-suppressed-too-many',
        file='kgen/partitioned/verify.py',
        original='allowed = math.floor(suppression * rows + 1e-9)',
        mutated='allowed = math.floor(suppression * rows + 1e-9) + 1',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='partitioned-check-ceil-limit',
        file='kgen/partitioned/verify.py',
        original='allowed = math.floor(suppression * rows + 1e-9)',
        mutated='allowed = math.ceil(suppression * rows - 1e-9)',
        tests=CHECKERS,
    ),
    dict(
        id='partitioned-check-small-le-k',
        file='kgen/partitioned/verify.py',
        original='small = sizes[~starred & (rows < k)]',
        mutated='small = sizes[~starred & (rows < k - 1)]',
        tests=CHECKERS,
    ),
    dict(
        id='check-single-file-ceil-limit',
        file='kgen/check.py',
        original='allowed = math.floor(suppression * n + 1e-9)',
        mutated='allowed = math.ceil(suppression * n - 1e-9)',
        tests=CHECKERS,
    ),
]
MUTANTS += [
    dict(
        id="partitioned-key-word-2-64",
        file="kgen/partitioned/keys.py",
        original="MAX_WORD = 1 << 62",
        mutated="MAX_WORD = 1 << 64",
        tests=KEYS,
        planted=True,
    ),
    dict(
        id="device-redensify-on-span-alone",
        file="fitness/xp_kernel.py",
        original="        if span * card >= MAX_SPAN:\n            key = densify(backend, key, span)",
        mutated="        if span >= MAX_SPAN:\n            key = densify(backend, key, span)",
        tests=KEYS,
        planted=True,
    ),
    dict(
        id="risk-renumber-at-2-72",
        file="kgen/risk.py",
        original="if span * card >= 1 << 62:  # renumber before the key could overflow int64",
        mutated="if span * card >= 1 << 72:  # renumber before the key could overflow int64",
        tests=KEYS,
        planted=True,
    ),
    dict(
        id="check-renumber-at-2-72",
        file="kgen/check.py",
        original="if span * card >= 1 << 62:  # renumber before the mixed-radix key could overflow int64",
        mutated="if span * card >= 1 << 72:  # renumber before the mixed-radix key could overflow int64",
        tests=KEYS,
    ),
    dict(
        id="kernel-redensify-on-span-alone",
        file="fitness/kernel.py",
        original="        if span * card >= _MAX_SPAN:\n            key, span = densify(key, span)",
        mutated="        if span >= _MAX_SPAN:\n            key, span = densify(key, span)",
        tests=KEYS,
    ),
]
PLANTED = ["tests/test_planted_bugs_25.py"]
MUTANTS += [
    dict(
        id="sha256-first-chunk-only",
        file="kgen/provenance.py",
        original="        for block in iter(lambda: handle.read(CHUNK), b\"\"):\n            digest.update(block)",
        mutated="        digest.update(handle.read(CHUNK))",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="journalist-mean-unweighted",
        file="kgen/risk.py",
        original="\"mean\": float((sizes * risk).sum() / n_r),",
        mutated="\"mean\": float(risk.mean()),",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="apply-without-k-model",
        file="kgen/apply.py",
        original="    if len(ks) != 1:",
        mutated="    if len(ks) > 1:",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="report-optimal-on-limit",
        file="kgen/report.py",
        original="result.algorithm in EXACT_SEARCHES and result.stopped == \"complete\" and found is not None",
        mutated="result.algorithm in EXACT_SEARCHES and found is not None",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="datafly-walks-past-feasible",
        file="lattice/search/datafly.py",
        original="key=lambda e: (not e.feasible, objective_key(e))",
        mutated="key=lambda e: objective_key(e)",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="datafly-prefers-infeasible",
        file="lattice/search/datafly.py",
        original="key=lambda e: (not e.feasible, objective_key(e))",
        mutated="key=lambda e: (e.feasible, objective_key(e))",
        tests=PLANTED,
    ),
    dict(
        id="certify-kept-lower-bound",
        file="lattice/search/certify.py",
        original="bound = bound if best is None else min(bound, best.loss)",
        mutated="bound = bound",
        tests=PLANTED + ["tests/test_certify.py"],
        equivalent=("for LOG the solver's cutoff is the best node's own cost (inclusive), so its bound never "
                    "exceeds the best loss and the min is a no-op; for a float objective the overshoot it "
                    "removes is below the cutoff's rounding slack (Costs.tolerance)"),
    ),
    dict(
        id="certify-kept-lower-bound-at-the-end",
        file="lattice/search/certify.py",
        original="state[\"lower\"] = None if best is None else best.loss",
        mutated="state[\"lower\"] = state[\"lower\"]",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="certify-climb-limit",
        file="lattice/search/certify.py",
        original="lo, hi = x[i], box.upper[i] + 1",
        mutated="lo, hi = x[i], box.upper[i]",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="hitting-log-denominator",
        file="lattice/hitting.py",
        original="return steps, lcm * len(positive)",
        mutated="return steps, lcm * len(heights)",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="hitting-cut-outside-the-box",
        file="lattice/hitting.py",
        original="if any(x < a for x, a in zip(node, self.lower)):",
        mutated="if all(x < a for x, a in zip(node, self.lower)):",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="hitting-maximal-filter-across-blocks",
        file="lattice/hitting.py",
        original="rows = rows[~(kept[None, :count, :] >= rows[:, None, :]).all(axis=2).any(axis=1)]",
        mutated="rows = rows[(kept[None, :count, :] >= rows[:, None, :]).all(axis=2).any(axis=1)]",
        tests=PLANTED,
        planted=True,
    ),
]
SIDE = ["tests/test_side_by_side_runs.py"]
MUTANTS += [
    dict(
        id="pycanon-venv-without-lock",
        file="tests/conftest.py",
        original="        fcntl.flock(lock, fcntl.LOCK_EX)  # released",
        mutated="        pass  # released",
        tests=SIDE,
        planted=True,
        note="issue 25 item 4: two runs build the shared venv at once",
    ),
    dict(
        id="pycanon-venv-built-in-place",
        file="tests/conftest.py",
        original="temporary = Path(tempfile.mkdtemp(prefix=f\".{target.name}.\", dir=target.parent))",
        mutated="temporary = target",
        tests=SIDE,
        planted=True,
        note="issue 25 item 4: the venv is visible before it is complete",
    ),
]

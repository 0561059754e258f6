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
        file='kgen/check/mondrian.py',
        original='small = sizes[classes] < k\n',
        mutated='small = sizes[classes] < k - 1\n',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='mondrian-check-l-minus-1',
        file='kgen/check/mondrian.py',
        original='few = distinct[classes] < l\n',
        mutated='few = distinct[classes] < l - 1\n',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='mondrian-check-any-prefix',
        file='kgen/check/mondrian.py',
        original='ok |= starts & (np.char.str_len(text.astype(str)) <= lengths[inverse])',
        mutated='ok |= np.char.str_len(text.astype(str)) <= lengths[inverse]',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='partitioned-check-one-suppressed-too-many',
        file='kgen/check/partitioned.py',
        original='allowed = math.floor(suppression * rows + 1e-9)',
        mutated='allowed = math.floor(suppression * rows + 1e-9) + 1',
        tests=CHECKERS,
        planted=True,
    ),
    dict(
        id='partitioned-check-ceil-limit',
        file='kgen/check/partitioned.py',
        original='allowed = math.floor(suppression * rows + 1e-9)',
        mutated='allowed = math.ceil(suppression * rows - 1e-9)',
        tests=CHECKERS,
    ),
    dict(
        id='partitioned-check-small-le-k',
        file='kgen/check/partitioned.py',
        original='small = sizes[~starred & (rows < k)]',
        mutated='small = sizes[~starred & (rows < k - 1)]',
        tests=CHECKERS,
    ),
    dict(
        id='check-single-file-ceil-limit',
        file='kgen/check/kanonymity.py',
        original='allowed = math.floor(suppression * n + 1e-9)',
        mutated='allowed = math.ceil(suppression * n - 1e-9)',
        tests=CHECKERS,
    ),
]
MUTANTS += [
    dict(
        id="partitioned-key-word-2-64",
        file="kgen/runners/partitioned/keys.py",
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
        file="kgen/report/risk.py",
        original="if span * card >= 1 << 62:  # renumber before the key could overflow int64",
        mutated="if span * card >= 1 << 72:  # renumber before the key could overflow int64",
        tests=KEYS,
        planted=True,
    ),
    dict(
        id="check-renumber-at-2-72",
        file="kgen/check/kanonymity.py",
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
        file="kgen/report/provenance.py",
        original="        for block in iter(lambda: handle.read(CHUNK), b\"\"):\n            digest.update(block)",
        mutated="        digest.update(handle.read(CHUNK))",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="journalist-mean-unweighted",
        file="kgen/report/risk.py",
        original="\"mean\": float((sizes * risk).sum() / n_r),",
        mutated="\"mean\": float(risk.mean()),",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="apply-without-k-model",
        file="kgen/run/apply.py",
        original="    if len(ks) != 1:",
        mutated="    if len(ks) > 1:",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="report-optimal-on-limit",
        file="lattice/search/base.py",
        original="return self.exact and self.complete and self.best is not None",
        mutated="return self.exact and self.best is not None",
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
        original="value = value if best is None else min(value, best.loss)",
        mutated="value = value",
        tests=PLANTED + ["tests/test_certify.py"],
        equivalent=("for LOG the solver's cutoff is the best node's own cost (inclusive), so its bound never "
                    "exceeds the best loss and the min is a no-op; for a float objective the overshoot it "
                    "removes is below the cutoff's rounding slack (Costs.tolerance)"),
    ),
    dict(
        id="certify-kept-lower-bound-at-the-end",
        file="lattice/search/certify.py",
        original=("            self.lower = None if self.budget.best is None else self.budget.best.loss\n"
                  "            return False"),
        mutated="            self.lower = self.lower\n            return False",
        tests=PLANTED,
        planted=True,
    ),
    dict(
        id="certify-climb-limit",
        file="lattice/search/certify.py",
        original="lo, hi = int(y[i]), self.box.upper[i] + 1",
        mutated="lo, hi = int(y[i]), self.box.upper[i]",
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

# --- the code of the last two turns: reader, encoding, hierarchies, roll-ups, provenance, risk, checkers -------

INGEST = ["tests/test_numeric_ingest.py", "tests/test_table.py", "tests/test_mutation_survivors.py"]
HIERARCHY = ["tests/test_numeric_ingest.py", "tests/test_builders.py"]
SURVIVORS = ["tests/test_mutation_survivors.py"]
RISK = ["tests/test_risk.py", "tests/test_keys_at_word_boundary.py", "tests/test_planted_bugs_25.py", *SURVIVORS]
PROVENANCE = ["tests/test_provenance.py", "tests/test_planted_bugs_25.py", "tests/test_mutation_survivors.py"]
KERNELS = ["tests/test_kernels.py", "tests/test_keys_at_word_boundary.py"]
MUTANTS += [
    dict(id="csvio-digit-count-side", file="kgen/io/csvio.py",
         original='return np.searchsorted(_POWERS, magnitude, side="right") + 1',
         mutated='return np.searchsorted(_POWERS, magnitude, side="left") + 1', tests=INGEST),
    dict(id="csvio-decimal-order-sign", file="kgen/io/csvio.py",
         original="return np.lexsort((digits, padded, numbers >= 0))",
         mutated="return np.lexsort((digits, padded, numbers > 0))", tests=INGEST),
    dict(id="csvio-decimal-order-no-length", file="kgen/io/csvio.py",
         original="return np.lexsort((digits, padded, numbers >= 0))",
         mutated="return np.lexsort((padded, numbers >= 0))", tests=INGEST),
    dict(id="csvio-integers-max-magnitude", file="kgen/io/csvio.py",
         original="if low <= -MAX_MAGNITUDE or high >= MAX_MAGNITUDE:",
         mutated="if low < -MAX_MAGNITUDE or high > MAX_MAGNITUDE:", tests=INGEST),
    dict(id="csvio-integers-int32-range", file="kgen/io/csvio.py",
         original="if -(1 << 31) <= low and high < 1 << 31:",
         mutated="if -(1 << 31) <= low and high <= 1 << 31:", tests=INGEST),
    dict(id="csvio-integers-byte-range", file="kgen/io/csvio.py",
         original="if data.min() < _MINUS or data.max() > _NINE:",
         mutated="if data.min() < _MINUS or data.max() > _NINE + 1:", tests=INGEST,
         equivalent=("the byte test is only a fast pre-filter: the one byte it lets through, ':', is refused by "
                     "pyarrow's int64 cast just after it (as '.' and '/' already are), so the column is text "
                     "either way")),
    dict(id="csvio-canonical-length-sign", file="kgen/io/csvio.py",
         original="int(np.dot(digit_count(np.abs(distinct)) + (distinct < 0), counts)) != length",
         mutated="int(np.dot(digit_count(np.abs(distinct)), counts)) != length", tests=INGEST),
    dict(id="csvio-labels-leading-zero", file="kgen/io/csvio.py",
         original="if str(number) != value:  # `007` or `-0` is no label",
         mutated="if False:  # `007` or `-0` is no label", tests=INGEST),
    dict(id="csvio-labels-eq-order", file="kgen/io/csvio.py",
         original="return len(other) == len(self) and self.strings() == tuple(other)",
         mutated="return len(other) == len(self) and sorted(self.strings()) == sorted(other)", tests=INGEST),
    dict(id="csvio-dense-range-limit", file="kgen/io/csvio.py",
         original="rank[distinct[order] - low] = np.arange(distinct.size)",
         mutated="rank[distinct - low] = np.arange(distinct.size)", tests=INGEST),
    dict(id="hierarchies-decimal-height", file="kgen/io/hierarchies.py",
         original="height = max(1, len(str(int(np.abs(ordered[[0, -1]]).max()))))",
         mutated="height = max(1, len(str(int(np.abs(ordered[[0, -1]]).max()))) - 1)", tests=HIERARCHY),
    dict(id="hierarchies-decimal-label-high", file="kgen/io/hierarchies.py",
         original='labels.append(tuple(f"[{low}, {low + width - 1}]" for low in distinct[order].tolist()))',
         mutated='labels.append(tuple(f"[{low}, {low + width}]" for low in distinct[order].tolist()))',
         tests=HIERARCHY),
    dict(id="hierarchies-decimal-negative-top", file="kgen/io/hierarchies.py",
         original="if len(labels[-1]) > 1:  # negative numbers",
         mutated="if len(labels[-1]) > 2:  # negative numbers", tests=HIERARCHY),
    dict(id="hierarchies-decimal-label-order", file="kgen/io/hierarchies.py",
         original="order = decimal_order(distinct // width)  # `q` and",
         mutated="order = np.argsort(distinct // width)  # `q` and", tests=HIERARCHY),
    dict(id="encoding-code-dtype-uint8", file="fitness/encoding.py",
         original="return np.uint8 if card <= 1 << 8 else np.uint16 if card <= 1 << 16 else np.int32",
         mutated="return np.uint8 if card <= 1 << 9 else np.uint16 if card <= 1 << 16 else np.int32",
         tests=["tests/test_numeric_ingest.py", "tests/test_table.py", "tests/test_kernels.py"]),
    dict(id="encoding-one-value-level", file="fitness/encoding.py",
         original="if not self.leaf.size or not leaf_to_level.any():",
         mutated="if not self.leaf.size or not leaf_to_level.all():",
         tests=["tests/test_numeric_ingest.py", "tests/test_table.py", "tests/test_kernels.py"]),
    dict(id="rollup-projection-one-qi", file="fitness/rollup.py",
         original="if varying is not None and len(varying) <= 1:",
         mutated="if varying is not None and len(varying) <= 2:", tests=KERNELS),
    dict(id="rollup-projection-index", file="fitness/rollup.py",
         original="result = self.projection(node, varying[0] if varying else None)",
         mutated="result = self.projection(node, varying[-1] if len(varying) > 1 else None)", tests=KERNELS),
    dict(id="provenance-chunk-dropped", file="kgen/report/provenance.py",
         original="        for block in iter(lambda: handle.read(CHUNK), b\"\"):\n            digest.update(block)",
         mutated="        for block in iter(lambda: handle.read(CHUNK), b\"\"):\n            digest.update(block[1:])",
         tests=PROVENANCE),
    dict(id="provenance-verify-skips-input", file="kgen/report/provenance.py",
         original='for label, path, key in (("release", release, "release"), ("input", input_path, "input")):',
         mutated='for label, path, key in (("release", release, "release"),):', tests=PROVENANCE),
    dict(id="risk-prosecutor-threshold-ge", file="kgen/report/risk.py",
         original="above = sizes[1.0 / sizes > threshold].sum()  # 1/|E| > tau, per record",
         mutated="above = sizes[1.0 / sizes >= threshold].sum()  # 1/|E| > tau, per record", tests=RISK),
    dict(id="risk-missing-population-class", file="kgen/report/risk.py",
         original="        if found < sizes[i]:",
         mutated="        if found < sizes[i] - 1:", tests=RISK),
    dict(id="risk-zayatz-conditional", file="kgen/report/risk.py",
         original="conditional = weights[1] / total",
         mutated="conditional = weights[1] / (total + uniques)", tests=RISK),
    dict(id="risk-pitman-range", file="kgen/report/risk.py",
         original="if not 0.0 <= uniques <= population:",
         mutated="if not 0.0 <= uniques:", tests=RISK),
    dict(id="risk-exact-when-whole-population", file="kgen/report/risk.py",
         original="population = max(n, round(n / sampling_fraction))",
         mutated="population = max(n, int(n / sampling_fraction) + 1)", tests=RISK),
    dict(id="check-starred-class-needs-k", file="kgen/check/partitioned.py",
         original="starred_class = starred_rows > allowed and starred_rows >= k",
         mutated="starred_class = starred_rows > allowed", tests=CHECKERS),
    dict(id="mondrian-check-interval-upper", file="kgen/check/mondrian.py",
         original="ok |= (low[inverse] <= value) & (value <= high[inverse])",
         mutated="ok |= (low[inverse] <= value) & (value <= high[inverse] + 1)", tests=CHECKERS + SURVIVORS),
]

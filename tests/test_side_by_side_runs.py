"""Two test runs at once share the cached pycanon virtual environment and both pass (issue 25, item 4).

Why: tests/conftest.py used to create the venv in place and then install into it, so a second run that started
meanwhile found its python and ran pycanon before pycanon was installed. `build_venv` now builds in a
temporary folder, renames it into place when complete, and holds a lock file while it builds. Here two
processes build the same venv at once (without packages, so that the test is fast; both start at the same
moment, so that without the lock both would build): exactly one builds it, the other waits and uses it,
nothing half-built is ever visible at the final path, and no temporary folder is left.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

BUILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from conftest import build_venv
Path({ready!r}).touch()
while not Path({go!r}).exists():  # both start building at the same moment
    time.sleep(0.001)
print(json.dumps(build_venv(Path({target!r}), [])))
"""


def test_two_processes_building_the_venv_at_once_both_get_a_complete_one(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "kgen-pycanon"
    seen_incomplete: list[str] = []
    done = threading.Event()

    def watch() -> None:  # whenever the final path exists, it is complete
        while not done.is_set():
            if target.exists() and not ((target / "bin" / "python").exists() and (target / "pyvenv.cfg").exists()):
                seen_incomplete.append(str(sorted(p.name for p in target.iterdir())))
            time.sleep(0.001)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        runs = []
        for i in range(2):
            code = BUILD.format(tests=str(TESTS), target=str(target), ready=str(tmp_path / f"ready{i}"),
                                go=str(tmp_path / "go"))
            runs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True))
        deadline = time.monotonic() + 120
        while not all((tmp_path / f"ready{i}").exists() for i in range(2)) and time.monotonic() < deadline:
            time.sleep(0.01)
        (tmp_path / "go").touch()
        outputs = [run.communicate(timeout=300) for run in runs]
    finally:
        done.set()
        watcher.join()
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    built = sorted(json.loads(out) for out, _ in outputs)
    assert built == [False, True]  # one built it, the other waited for it
    assert not seen_incomplete, seen_incomplete[:3]
    probe = subprocess.run([str(target / "bin" / "python"), "-c", "import sys; print(sys.prefix)"],
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0 and Path(probe.stdout.strip()) == target
    assert sorted(p.name for p in target.parent.iterdir()) == [".kgen-pycanon.lock", "kgen-pycanon"]


def test_a_venv_left_without_its_python_is_rebuilt(tmp_path: Path) -> None:
    """A folder an interrupted older run left behind (no bin/python) does not pass for a venv."""
    sys.path.insert(0, str(TESTS))
    from conftest import build_venv

    target = tmp_path / "kgen-pycanon"
    (target / "lib").mkdir(parents=True)
    assert build_venv(target, []) is True and (target / "bin" / "python").exists()
    assert build_venv(target, []) is False

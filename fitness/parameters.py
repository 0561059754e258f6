"""What a parameter accepts, said once: the checks that Config, the privacy models and report readers share.

A `Constraint` is one row of a constraints table (scikit-learn's `_parameter_constraints` is the model): the
field's label for messages, its kind, its range or choices. `kgen.run.config.PARAMETER_CONSTRAINTS` holds the
run's own fields; each privacy model family declares its parameters with one (`fitness.privacy.Parameter`), so
a model's range is written in its own module and nowhere else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lattice.errors import InputError


def is_real(value: object) -> bool:
    """A parameter value that is a real number and not a bool (True is an int to Python, not a count to a
    user): what models, Config and report readers accept as a number."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_whole(value: object) -> bool:
    """A whole number (an int, not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool)


def require_whole(name: str, value: object, low: int, what: str = "") -> None:
    """Each model validates its own parameters: `KAnonymity(0)` is an InputError, not a model."""
    if not is_whole(value) or value < low:  # type: ignore[operator]
        raise InputError(f"{name} must be a whole number{what} >= {low}, got {value!r}")


@dataclass(frozen=True)
class Constraint:
    """What one parameter accepts, and the one message for what it does not.

    Attributes
    ----------
    label : str
        How the message names the parameter ("k", "t-closeness").
    kind : {"whole", "real", "choice", "text"}
        A whole number, a finite real number, one of `choices`, or non-empty text (a column or file name).
    low, high : float or None
        The range (inclusive; `above` makes `low` exclusive).
    optional : bool
        None is allowed (the parameter is not set).
    choices : tuple of str
        With kind "choice", the accepted values.
    finite : bool
        Refuse inf and nan (kind "whole" and "real").
    """

    label: str
    kind: str
    low: float | None = None
    high: float | None = None
    above: bool = False
    optional: bool = False
    choices: tuple[str, ...] = ()
    finite: bool = True

    def check(self, value: object) -> None:
        """Raise an InputError (exit 2) naming the parameter when `value` is not accepted."""
        if value is None and self.optional:
            return
        if self.kind == "choice":
            if value not in self.choices:
                raise InputError(f"unknown {self.label} {value!r}; choose {', '.join(self.choices[:-1])} or "
                                 f"{self.choices[-1]}")
            return
        if self.kind == "text":
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{self.label} must be non-empty text, got {value!r}")
            return
        if not (is_whole(value) if self.kind == "whole" else is_real(value)) or not self.within(value):
            raise InputError(f"{self.label} must be {self.wanted()}, got {value!r}")

    def within(self, value: object) -> bool:
        number = float(value)  # type: ignore[arg-type]
        if self.finite and not math.isfinite(number):
            return False
        if self.low is not None and (number <= self.low if self.above else number < self.low):
            return False
        return self.high is None or number <= self.high

    def wanted(self) -> str:
        """The accepted values in words, for the message."""
        if self.kind == "real" and self.low == 0 and self.high == 1:
            return "a fraction in [0, 1]"
        noun = "a whole number" if self.kind == "whole" else "a finite number"
        if self.label.endswith(("limit", "timeout")):
            noun += " of seconds"
        bound = "" if self.low is None else f" {'>' if self.above else '>='} {self.low:g}"
        if self.high is not None:
            bound += f" and <= {self.high:g}"
        return noun + bound

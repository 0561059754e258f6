"""Generalization hierarchies, lattice nodes and boxes, and the searches over them.

This package knows nothing about how a node is evaluated: searches receive an evaluator.
"""

from lattice.box import Box
from lattice.errors import InputError
from lattice.hierarchy import Hierarchy
from lattice.node import Node, height, precision_loss

__all__ = ["Box", "Hierarchy", "InputError", "Node", "height", "precision_loss"]

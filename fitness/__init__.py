"""Data-dependent evaluation of lattice nodes: encoded tables, support maps, kernels, privacy models,
information-loss metrics and the evaluator that combines them."""

from fitness.encoding import EncodedQI, EncodedTable, encode_column
from fitness.evaluator import Evaluation, NodeEvaluator
from fitness.models import KAnonymity, PrivacyModel
from fitness.partition import Partition

__all__ = [
    "EncodedQI", "EncodedTable", "Evaluation", "KAnonymity", "NodeEvaluator", "Partition", "PrivacyModel",
    "encode_column",
]

"""Datasets shipped with kgen: a deterministic synthetic stand-in for the KGen paper's fraud dataset F."""

from kgen.datasets.fraud import ATTRIBUTES, IDENTIFIER, ROWS, Attribute, FraudDataset, generate

__all__ = ["ATTRIBUTES", "IDENTIFIER", "ROWS", "Attribute", "FraudDataset", "generate", "generate_fraud"]

generate_fraud = generate

"""Privacy models beyond k-anonymity, l-diversity and t-closeness, one module per family (docs/privacy-models.md)."""

"""Reading and writing files: CSV and Parquet tables (`table`, `csvio`), safe input and output files (`files`),
hierarchies from files and builders (`hierarchies`), spreadsheet-formula escaping (`formulas`)."""

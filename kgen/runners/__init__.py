"""Where evaluations run: local processes or threads (loky, joblib), a Dask cluster, and row partitions of a
table too large for one process (`partitioned`)."""

"""The runners' settings that option definitions and Config read without importing a runner (joblib, Dask)."""

BACKENDS = ("loky", "threading", "dask")
CONNECT_TIMEOUT = 10.0  # seconds to reach a Dask scheduler and hear its answer (exit 6 past it)

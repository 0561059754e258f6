"""The one run path: Config → prepare → search → release → Result, for the CLI and the API whatever the
runner (in memory, parallel workers, a device, or row partitions on Dask)."""

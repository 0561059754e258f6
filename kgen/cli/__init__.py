"""The `kgen` command line: one module per command, options defined once (`kgen.cli.options`), exit codes
once (`kgen.status`). The console entry point is `kgen.cli.main:main`."""

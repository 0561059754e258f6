"""A Result in, a report out: the report built once (`build`), published beside its release as a locked,
checksummed pair (`build.publish`), with provenance, risk figures, the console summary and the HTML page."""

"""Results: the ledger, analysis, report, plots and token costs."""

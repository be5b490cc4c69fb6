"""From runs to verdicts: the statistics (stats), per-cell findings and warnings (findings), how often
this machine's noise fools a verdict (calibration), two results folders compared (compare), a sweep's
throughput against one setting (sweep), auto against the fixed settings of a sweep (auto), and what of it
results.json keeps, saved after every run (derived)."""

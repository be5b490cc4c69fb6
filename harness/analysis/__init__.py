"""From runs to verdicts: the statistics (stats), per-cell findings and warnings (findings), how often
this machine's noise fools a verdict (calibration), two results folders compared (compare), and a sweep's
throughput against one setting (sweep)."""

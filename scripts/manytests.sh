#!/usr/bin/env bash
# The seed's manytests.sh: run scripts/perftest.sh ten times, then print the mean and standard
# deviation of perf_data.txt. perftest.sh's variables pass through the environment:
#   asyncio=0 num=200 runs=10 scripts/manytests.sh
# This is the seed's workflow, kept for comparison; `pulp-sync bench run` (or ./manytests.sh) does
# the same with interleaving, warm-up, confidence intervals, significance tests and a report.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${runs:-10}"
data="${data:-perf_data.txt}"
export data
for i in $(seq 1 "$runs"); do
  printf '[%d/%d] ' "$i" "$runs"
  scripts/perftest.sh
done
source scripts/bootstrap.sh
"$PYTHON" - "$data" <<'PY'
import sys
from pathlib import Path

from harness.analysis.stats import describe

times = [float(line) for line in Path(sys.argv[1]).read_text().split()]
summary = describe(times)
spread = f" ± {summary.stdev:.3f}" if summary.stdev is not None else ""
interval = f", 95% CI {summary.ci_low:.3f} … {summary.ci_high:.3f}" if summary.ci_low is not None else ""
print(f"{sys.argv[1]}: {summary.n} runs, mean ± stddev {summary.mean:.3f}{spread} s{interval}")
PY

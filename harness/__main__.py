"""`python -m harness ...`: the same commands as `pulp-sync bench ...`."""

from harness.cli import main

main()

"""`python -m pulp_sync` is the `pulp-sync` command."""

from pulp_sync.cli import main

main()

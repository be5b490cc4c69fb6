"""What an experiment is, before anything runs: the spec read from TOML and checked (spec), what it will
cost (plan), a seeded sample of a manifest (sample), and the operator's own remote, its URL shown without
secrets and its manifests fetched and checked (operator_remote)."""

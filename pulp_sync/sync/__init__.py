"""The sync pipeline: a remote's manifest to a new repository version (`pipeline`), the spool of planned
downloads (`spool`), one sync split across processes (`split`) and the one module that forks and
terminates this process's children (`children`)."""

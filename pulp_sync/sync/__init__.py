"""The sync pipeline: a remote's manifest to a new repository version (`pipeline`), the spool of planned
downloads (`spool`) and one sync split across processes (`split`)."""

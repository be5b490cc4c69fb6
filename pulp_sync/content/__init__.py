"""What the service holds and serves: the content-addressed store (`store`), content rows written in bulk
(`bulk`), versions made outside a sync (`versions`), uploads (`uploads`), the store checked against the
database (`verify`), orphans deleted (`orphans`) and what a distribution serves (`serving`)."""

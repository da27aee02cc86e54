"""The researcher's batch pages (:mod:`.views`) and their API (:mod:`.api`), which compose every
sub-domain: above them all, so that none imports another upwards."""

"""torchlean: neural-network training on kernel capsules accepted under explicit contracts."""

"""Learning to rank with any metric as the objective (the GAP paper §5): LETOR data, swap deltas, LambdaMART
with LightGBM, SoftRank, and the trained-for × tested-on experiment."""

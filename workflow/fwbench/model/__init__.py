"""The models as data: architecture specs, shared weights, the float64 reference, the cost model."""

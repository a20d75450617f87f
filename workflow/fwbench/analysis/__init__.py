"""From raw cells to numbers: aggregation, estimators and statistics, roofline, compile speedups,
significance and winners, and comparisons between framework versions."""

"""From raw cells to numbers: aggregation, estimators and statistics, roofline, compile speedups,
every comparison's verdict (comparisons), winners, and comparisons between framework versions."""

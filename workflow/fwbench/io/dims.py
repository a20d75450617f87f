"""Names every result file shares: the cell dimensions, cell statuses and the baseline mode."""

CELL_DIMS = ("framework", "mode", "arch", "batch")
STATUS_OK = "ok"
STATUS_FAILED = "failed"
STATUS_ABSENT = "absent"  # no cell was given for this position of the aggregate
# The mode every framework has: compiled modes are measured against it.
EAGER_MODE = "eager"

"""Training benchmarks: settings (config), datasets (data), the epoch loop (run) and the runs
stacked and summarized (summary); the train file format is fwbench.io.train_file."""

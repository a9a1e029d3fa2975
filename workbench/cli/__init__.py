"""The command-line face: parse arguments, call the core, render. Nothing else."""

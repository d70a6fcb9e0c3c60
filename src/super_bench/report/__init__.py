"""Reports on saved runs: the static HTML viewer, the importer of the paper's published
trajectories, run comparison, the leaderboard and plots. Nothing here executes tasks."""

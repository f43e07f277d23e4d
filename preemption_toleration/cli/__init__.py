"""Command-line adapters: `ptol` and its kubectl-plugin twin `kubectl-ptol`."""

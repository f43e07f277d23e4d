"""The command-line adapter: `ptol` and its kubectl-plugin twin `kubectl-ptol`, one module per subcommand
(its arguments, what it starts, its exit code) and the options they share."""

"""Pure core: the toleration contract, its protection windows and the admission rules.

Nothing here does I/O or imports a framework; every adapter (operator, webhooks, CLI) builds on it.
"""

"""Thin async adapters around the Kubernetes API (kubernetes_asyncio), shared by every component."""

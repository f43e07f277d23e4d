"""Thin async adapters around the Kubernetes API (kubernetes_asyncio), shared by the operator and the webhook
server: the API client, list-then-watch informers and their listers, who a kubeconfig authenticates as,
kopf's login, and which operator replica is the active one."""

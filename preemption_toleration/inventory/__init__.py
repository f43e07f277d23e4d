"""What the guard and the scheduler extender know of the cluster's pods and nodes: slim records, built
as each object is decoded, and the indexes each decision reads (pods by key and by node, pending
preemptor candidates by priority). Pure: the watches that feed them live in `webhooks.caches`.
"""

"""`ptol demo`: the two use cases of architecture §1 played with the real kube-scheduler on a local control plane."""

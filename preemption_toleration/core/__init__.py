"""The toleration contract of the upstream PreemptionToleration plugin, pure and standard library only: its
two annotations parsed as Go parses them, the exemption check, what a toleration protects and until when,
its plain-words explanation, and the pod, quantity, selector, time and JSON-shape readers they need."""

"""The scheduler extender's adapter: its preemptVerb's request handling (`extender_endpoint`)."""

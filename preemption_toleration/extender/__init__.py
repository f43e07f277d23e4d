"""The scheduler extender's preempt decision, pure: which victims on each candidate node do not tolerate the
preemptor, chosen as upstream chooses them (its HTTP handling is `extender.adapter.extender_endpoint`)."""

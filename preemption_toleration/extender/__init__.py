"""The scheduler extender's preempt decision: which victims on each candidate node do not tolerate the
preemptor (pure: no I/O; the aiohttp route lives in `webhooks.server`)."""
